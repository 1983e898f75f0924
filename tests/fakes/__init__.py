"""Reusable fakes for tests: a real OpenAI-compatible HTTP server with scripted replies."""
