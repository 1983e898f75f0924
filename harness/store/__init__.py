"""The store: the only thing statistics and reports read."""

from harness.store.db import DEFAULT_URL, ENV_VAR, Store, now, resolve_url
from harness.store.migrations import SCHEMA_VERSION
from harness.store.tables import Attempt, Blob, Run, TrajectoryEvent, Trial

__all__ = [
    "DEFAULT_URL",
    "ENV_VAR",
    "SCHEMA_VERSION",
    "Attempt",
    "Blob",
    "Run",
    "Store",
    "Trial",
    "TrajectoryEvent",
    "now",
    "resolve_url",
]
