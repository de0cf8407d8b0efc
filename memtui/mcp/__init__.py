"""The MCP server agents query, and the scope it confines them to."""
