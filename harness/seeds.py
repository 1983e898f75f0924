"""Seeds derived from stable hashes: the one place trial seeds and shuffles come from.

A seed depends only on its parts (suite seed, task id, trial index, a purpose tag), so adding
tasks or trials never changes an existing trial's seed, and a run replays exactly.
"""

from __future__ import annotations

import hashlib


def derive_seed(*parts: object) -> int:
    """A 63-bit seed from a stable hash of the parts (never Python's salted ``hash``)."""
    digest = hashlib.sha256(":".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def trial_seed(suite_seed: int, task_id: str, trial_index: int) -> int:
    """The seed of trial ``trial_index`` of a task; every arm's trial i shares it."""
    return derive_seed("trial", suite_seed, task_id, trial_index)


__all__ = ["derive_seed", "trial_seed"]
