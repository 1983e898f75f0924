"""Sides across runs for ``harness pairwise RUN_A:ARM RUN_B:ARM ...``: which trials are
compared, and whether the runs can be compared at all.

Two runs' trials pair when they share a task, variant and trial index, as arms do within a
run. The pair means something only if both agents were given the same task: the runs'
shared tasks must not differ in definition (instruction, setup, graders other than
judges), budgets (the suite's or the task's), environment version or image, checked by ``compare``'s own
precondition (``harness.release.preconditions.differences``). Task sets may differ (the
shared tasks are compared, the rest counted as skipped), and so may grader code versions
(the judge reads the agents' outputs, not the graders' verdicts); sides with no task in
common are refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING

from harness.errors import ConfigError

if TYPE_CHECKING:
    from harness.pairwise.judging import Outcome
    from harness.pairwise.setup import PairwiseJudgeSetup
    from harness.release.source import Side
    from harness.store import Store
    from harness.store.tables import Run

REFUSED_CHECKS = ("task definitions", "budgets", "environments", "images")
"""``differences`` checks that make two runs' trials of a task incomparable."""


def resolve_sides(db: Store, refs: Sequence[str]) -> list[Side]:
    """Each ``RUN[:ARM]`` as a side (a run with one arm needs no ``:ARM``); two at least,
    none twice. A bad reference is a one-line ``ConfigError``."""
    from harness.release.source import resolve_side
    from harness.store.refs import RunRef, find_run

    sides: list[Side] = []
    for ref in refs:
        if RunRef.parse(ref).arm is None:
            run = find_run(db, RunRef.parse(ref).run)
            if len(run.arms) != 1:
                raise ConfigError(
                    "command line",
                    ref,
                    f"run {run.id} has {len(run.arms)} arms ({', '.join(run.arms)}); "
                    "name one as RUN:ARM",
                )
        side = resolve_side(db, ref, "baseline")
        if any(s.label == side.label for s in sides):
            raise ConfigError("command line", ref, f"{side.label} is named twice")
        sides.append(side)
    if len(sides) < 2:
        raise ConfigError("command line", "RUN:ARM", "pairwise judging needs two sides or more")
    return sides


def check_comparable(db: Store, sides: Sequence[Side]) -> None:
    """Refuse (one-line ``ConfigError``, exit 2) when two sides share no task, or their
    runs' shared tasks differ (``REFUSED_CHECKS``)."""
    from harness.analysis.load import DECISIONS, load_run_table
    from harness.release.preconditions import differences
    from harness.release.source import stored_config

    tables = {s.run.id: load_run_table(db, s.run.id, DECISIONS).trials for s in sides}
    for a, b in combinations(sides, 2):
        ta, tb = tables[a.run.id].of_arm(a.arm), tables[b.run.id].of_arm(b.arm)
        where = f"{a.label} and {b.label}"
        if not set(ta.task_ids.tolist()) & set(tb.task_ids.tolist()):
            raise ConfigError("command line", where, "share no task: nothing to compare")
        if a.run.id == b.run.id:
            continue  # arms of one run ran the same tasks
        found = differences(
            stored_config(a.run),
            ta,
            stored_config(b.run),
            tb,
            (a.label, b.label),
            judges_apart=True,
        )
        refused = [d["message"] for d in found if d["check"] in REFUSED_CHECKS]
        if refused:
            raise ConfigError(
                "command line",
                where,
                f"cannot be compared, their tasks differ: {'; '.join(refused)}",
            )


@dataclass
class Across:
    """What ``judge_across`` judged: the sides' labels, the runs, each task's cluster."""

    outcome: Outcome
    sides: list[str]
    runs: list[str]
    clusters: dict[str, str]
    notes: list[str]
    """What a reader of the numbers must know (e.g. the runs' seeds differ)."""


def judge_across(
    db: Store, refs: Sequence[str], setup: PairwiseJudgeSetup, concurrency: int = 4
) -> Across:
    """Resolve and check the sides (``resolve_sides``, ``check_comparable``), then judge
    every pair of them (``judge_sides``). Raises ``ConfigError`` before any judge call."""
    from harness.pairwise.judging import judge_sides
    from harness.pairwise.summary import clusters_of

    sides = resolve_sides(db, refs)
    check_comparable(db, sides)
    runs = {s.run.id: s.run for s in sides}
    trials = {rid: db.trials(rid) for rid in runs}
    chosen = {s.label: [t for t in trials[s.run.id] if t.arm == s.arm] for s in sides}
    outcome = judge_sides(db, chosen, runs, setup, concurrency)
    # The suites' clusters (their tasks agree: checked above); the first side's cluster_key.
    clusters = clusters_of(sides[0].run, [t for rows in chosen.values() for t in rows])
    return Across(outcome, list(chosen), list(runs), clusters, _seed_notes(list(runs.values())))


def _seed_notes(runs: Sequence[Run]) -> list[str]:
    """A note when the runs' suite seeds differ: their trial i then had different trial
    seeds, so the sides pair by trial index only, not as matched blocks."""
    seeds = {r.id: r.seed for r in runs}
    if len(set(seeds.values())) < 2:
        return []
    shown = ", ".join(f"{rid} {seed}" for rid, seed in seeds.items())
    return [
        f"the runs' suite seeds differ ({shown}): trials pair by task and trial index, "
        "not by trial seed"
    ]


__all__ = ["REFUSED_CHECKS", "Across", "check_comparable", "judge_across", "resolve_sides"]
