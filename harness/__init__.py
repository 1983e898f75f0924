"""Agent-evaluation harness: sandboxed trials, honest statistics, release gates."""

__version__ = "0.1.0"
