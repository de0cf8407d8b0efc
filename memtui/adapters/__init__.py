"""Adapters to the outside world: the memory root and its git baseline, model backends, transcript
readers, redaction."""
