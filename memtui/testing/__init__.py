"""Test and benchmark support shipped with the package (no pipeline code depends on it)."""
