"""Application services: one module or package per use case, called alike by the CLI, the TUI,
the MCP server and the hooks."""
