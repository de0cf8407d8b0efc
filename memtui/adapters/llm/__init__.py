"""Model access: OpenAI-compatible client, strict structured calls, the tool-calling agent loop."""
