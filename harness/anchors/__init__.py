"""Anchor sets: 2PL fits of a suite's tasks from the store's history (``harness anchors``)."""
