"""The suite's pairwise judge at the end of ``harness run``: the run's arms (the block's, or
all) compared as ``harness pairwise RUN`` compares them, before the report is printed (so
its pairwise section shows them).

A judge that fails does not undo the run: its trials are stored, the judgements paid for
are kept, and the failure is one line (the run exits 3, unresolved); ``harness pairwise
RUN`` continues from the stored judgements.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.errors import GraderError

if TYPE_CHECKING:
    from harness.pairwise.setup import PairwiseJudgeSetup
    from harness.store import Store


@dataclass(frozen=True)
class EndJudging:
    """What the end-of-run judge did: new calls and reused ones, or why it did not."""

    new_calls: int = 0
    reused: int = 0
    error: str | None = None
    """The judge failed (unreachable, refused): one line."""
    skipped: str | None = None
    """Nothing to compare (fewer than two of the block's arms ran)."""


def judge_at_end(
    store: Store, run_id: str, setup: PairwiseJudgeSetup, arms: list[str] | None
) -> EndJudging:
    """Judge every pair of ``arms`` (None: all of the run's) that ran in ``run_id``."""
    from harness.pairwise.judging import judge_run

    run = store.get_run(run_id)
    assert run is not None
    chosen = [a for a in (arms or run.arms) if a in run.arms]
    if len(chosen) < 2:
        return EndJudging(skipped="fewer than two of its arms ran (--arm)")
    try:
        outcome = judge_run(store, run, setup, chosen)
    except GraderError as exc:
        return EndJudging(error=str(exc))
    return EndJudging(new_calls=outcome.new_calls, reused=outcome.reused)


def run_config_entry(setup: PairwiseJudgeSetup, arms: list[str] | None) -> dict[str, object]:
    """What the run's stored config records of its pairwise judge: the setup hash (what
    ``harness pairwise`` stores its judgements under), the judge model and the arms."""
    return {"setup": setup.setup_hash(), "model": setup.model.name, "arms": arms}
