"""The per-task table of the HTML report and the viewer: per task and arm, passed/counted
trials, the first (failing) trial id to link to, and paired discordance between baseline and
candidate; and unresolved trials grouped by error kind.

Every statistic comes from the report data (``harness.report.load_report``); this module only
counts the run table's trials (``harness.analysis.load``) per task for display, with numpy,
so 50,000 trials cost a few array passes.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from harness.analysis.table import Trials
from harness.errors import RESOLVED
from harness.report.records import ErrorKind, Report
from harness.store.queries import Note


@dataclass
class ArmTask:
    """One arm's trials of one task."""

    n: int = 0
    passed: int = 0
    unresolved: int = 0
    first_fail: int | None = None
    first: int | None = None

    @property
    def rate(self) -> float:
        return self.passed / self.n if self.n else math.nan

    @property
    def unstable(self) -> bool:
        return 0 < self.passed < self.n


@dataclass
class TaskRow:
    task_id: str
    task_class: str
    cluster: str
    arms: dict[str, ArmTask] = field(default_factory=dict)
    discordant: int = 0
    """Matched trial pairs (same trial index, shared seed) on which baseline and candidate differ."""
    delta: float | None = None
    """candidate rate − baseline rate on this task."""


@dataclass
class TaskCounts:
    """The per-task rows, with the arms (in the report's order) and the policy they follow."""

    arms: list[str]
    baseline: str | None
    candidate: str | None
    denominator: str
    rows: list[TaskRow]


def task_counts(trials: Trials, report: Report) -> TaskCounts:
    """Per-task, per-arm counts with the first (failing) trial id, and paired discordance,
    under the report's arm roles and denominator (unresolved trials count as failures, or
    are left out)."""
    roles = report.get("roles") or {}
    settings = report.get("settings")
    denominator = settings["denominator"] if settings else "failure"
    arms = list(report.get("arms") or {})
    arms += [a for a in trials.arm.present() if a not in arms]
    baseline, candidate = roles.get("baseline"), roles.get("candidate")
    t = trials.where(np.argsort(trials.id, kind="stable"))  # oldest first: "first" is by id
    ok = t.passed
    counted = t.resolved if denominator == "exclude" else np.ones(len(t), dtype=bool)
    n_arms = len(t.arm.names)
    cell = t.task.codes.astype(np.int64) * n_arms + t.arm.codes
    size = len(t.task.names) * n_arms
    n = np.bincount(cell, weights=counted, minlength=size).astype(int)
    passed = np.bincount(cell, weights=ok & counted, minlength=size).astype(int)
    unresolved = np.bincount(cell, weights=~t.resolved, minlength=size).astype(int)
    first = _first_id(t.id, cell)
    first_fail = _first_id(t.id[counted & ~ok], cell[counted & ~ok])
    discordant = _discordance(t, counted, baseline, candidate)
    out: list[TaskRow] = []
    task_names = t.task.names.tolist()
    arm_names = t.arm.names.tolist()
    codes, firsts = np.unique(t.task.codes, return_index=True)
    for code, at_first in zip(codes.tolist(), firsts.tolist(), strict=True):
        row = TaskRow(
            task_names[code],
            t.task_class.names[t.task_class.codes[at_first]] or "",
            t.cluster.names[t.cluster.codes[at_first]] or "",
        )
        for a, arm in enumerate(arm_names):
            j = code * n_arms + a
            if j in first:
                row.arms[arm] = ArmTask(
                    int(n[j]), int(passed[j]), int(unresolved[j]), first_fail.get(j), first[j]
                )
        b, k = row.arms.get(baseline or ""), row.arms.get(candidate or "")
        if baseline and candidate and b and k and b.n and k.n:
            row.delta = k.rate - b.rate
            row.discordant = discordant.get(code, 0)
        out.append(row)
    return TaskCounts(arms, baseline, candidate, denominator, out)


def _first_id(ids: np.ndarray, cell: np.ndarray) -> dict[int, int]:
    """Cell → the id of its first trial (the trials come oldest first)."""
    cells, at = np.unique(cell, return_index=True)
    return dict(zip(cells.tolist(), ids[at].tolist(), strict=True))


def _discordance(
    t: Trials, counted: np.ndarray, baseline: str | None, candidate: str | None
) -> dict[int, int]:
    """Task code → matched (trial index, variant) pairs whose outcome differs between the
    baseline and the candidate (counted trials only)."""
    if not baseline or not candidate:
        return {}
    width_v = len(t.variant.names)
    width_i = int(t.trial_index.max(initial=0)) + 1
    key = (t.task.codes.astype(np.int64) * width_i + t.trial_index) * width_v + t.variant.codes
    sides = []
    for arm in (baseline, candidate):
        code = t.arm.code(arm)
        mask = counted & (t.arm.codes == (-1 if code is None else code))
        sides.append((key[mask], t.passed[mask], t.task.codes[mask]))
    (kb, yb, task), (kk, yk, _) = sides
    _, ib, ik = np.intersect1d(kb, kk, assume_unique=True, return_indices=True)
    differ = yb[ib] != yk[ik]
    tasks, counts = np.unique(task[ib][differ], return_counts=True)
    return dict(zip(tasks.tolist(), counts.tolist(), strict=True))


def error_kinds(notes: list[Note]) -> list[ErrorKind]:
    """Unresolved trials by arm, status and error kind, most frequent first."""
    kinds = Counter(
        (n.arm, n.status, error_kind(n.error)) for n in notes if n.status not in RESOLVED
    )
    return [
        {"arm": a, "status": s, "kind": k, "count": c}
        for (a, s, k), c in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))
    ]


def error_kind(error: str | None, limit: int = 90) -> str:
    """A short label for an error text: its first line, up to the first colon."""
    if not error:
        return "(no message)"
    lines = [ln for ln in error.strip().splitlines() if ln.strip()]
    if not lines:
        return "(no message)"
    # Tracebacks end with the exception line; messages start with it.
    line = lines[-1] if lines[0].startswith("Traceback") else lines[0]
    head = line.split(":", 1)[0] if ":" in line[:60] else line
    return head.strip()[:limit]
