"""Reading what a release decision needs about a run from the store besides its trials
(``harness.analysis.load``): the run a reference names, its stored config, an arm side.

The only module of ``harness.release`` that touches the store; everything else is pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from harness.errors import ConfigError
from harness.release.run_config import StoredConfig, StoredSuite


def get_run(store, run_id: str):
    """The run a reference names (``harness.store.refs``: latest, latest~N, an id or a
    unique start of one), or a ConfigError saying why none."""
    from harness.store.refs import find_run

    return find_run(store, run_id)


def stored_config(run) -> StoredConfig:
    """The run's stored resolved config (``{}`` for a run stored without one)."""
    return cast(StoredConfig, run.config or {})


def suite_config(run) -> StoredSuite:
    """A copy of the run's stored suite (``{}`` when absent)."""
    return StoredSuite(**(stored_config(run).get("suite") or {}))


@dataclass(frozen=True)
class Side:
    """One side of a comparison: a run and one of its arms."""

    run: Any
    arm: str

    @property
    def label(self) -> str:
        return f"{self.run.id}:{self.arm}"


def resolve_side(store, spec: str, role: str) -> Side:
    """``RUN[:ARM]`` to a Side. Without ARM: the run's only arm, else its primary baseline
    (``role="baseline"``) or candidate (``role="candidate"``)."""
    run_id, _, arm = spec.partition(":")
    run = get_run(store, run_id)
    if arm:
        if arm not in run.arms:
            raise ConfigError(
                spec, "", f"run {run.id} has no arm '{arm}' (arms: {', '.join(run.arms)})"
            )
        return Side(run, arm)
    if len(run.arms) == 1:
        return Side(run, run.arms[0])
    from harness.analysis import run_roles

    roles = run_roles(suite_config(run), list(run.arms))
    pick = roles.baseline if role == "baseline" else roles.candidate
    if pick is None:
        raise ConfigError(spec, "", f"run {run.id} has several arms; name one as RUN:ARM")
    return Side(run, pick)
