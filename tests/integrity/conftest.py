"""Fixtures of the red-team tests: the harness-environment canary (``canary.py``)."""

from tests.integrity.canary import canary

__all__ = ["canary"]
