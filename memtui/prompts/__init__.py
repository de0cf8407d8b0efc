"""The prompts memtui sends, as package data (read with importlib.resources): outside the layers, every layer
that talks to a model may read them."""
