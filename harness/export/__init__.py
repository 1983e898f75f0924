"""Portable logs: a run out of the store as JSON lines (and back in), or as an Inspect AI log."""
