"""The ``harness run`` flags that override a suite's settings or select from it.

Why a declared type: the overrides travel from the CLI through the runner to the loader, are
stored with the run (``runs.overrides``) and are read back on ``--resume``, so the same keys
are spelled in four places; mypy checks each against this one declaration.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import ConfigDict, TypeAdapter, with_config
from typing_extensions import TypedDict  # pydantic validates it (Python < 3.12)


@with_config(ConfigDict(extra="forbid"))
class Overrides(TypedDict, total=False):
    """Only the flags given: an absent key leaves the suite's own setting."""

    sandbox: str
    executor: str
    """Where trials run; outside the config hash (a resume may change it)."""
    ray_address: str
    trials: int
    concurrency: int
    seed: int
    task: list[str]
    """Selections (glob patterns of task ids): pick from the suite, not suite settings."""
    limit: int
    subset: str
    """``METHOD:N`` or ``METHOD:P%``: the suite's ``subset:`` for this run (in the hash)."""
    arm: list[str]
    allow_internet: bool
    """Let tasks that ask for open egress have it (``Suite.allow_internet``)."""


_CHECK = TypeAdapter(Overrides)


def given(raw: Mapping[str, object] | None) -> Overrides:
    """The overrides in ``raw`` that were given (a ``None`` value is a flag left out),
    checked against ``Overrides``: a key the harness does not know is an error."""
    return _CHECK.validate_python({k: v for k, v in (raw or {}).items() if v is not None})
