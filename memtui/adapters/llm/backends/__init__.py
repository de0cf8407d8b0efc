"""Model backends behind one interface: ``openai_http`` (any OpenAI-compatible server), ``codex_cli`` and
``claude_cli`` (the agents the user already has, on their own login). See ``base.py``."""
