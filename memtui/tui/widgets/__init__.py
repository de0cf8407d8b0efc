"""Reusable widgets: the windowed table, the diff view, the status and task bars."""
