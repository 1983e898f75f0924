"""The per-task table of the HTML report and the viewer: per task and arm, passed/counted
trials, the first (failing) trial id to link to, and paired discordance between baseline and
candidate; and unresolved trials grouped by error kind.

Every statistic comes from the report data (``harness.report.load_report``); this module only
counts trials per task for display. Rows come from ``Store.trial_columns`` (one query, columns
as lists), so 50,000 trials cost one pass.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

from harness.errors import RESOLVED
from harness.report.records import ErrorKind, Report
from harness.store.tables import Trial, column_names

TRIAL_COLUMNS = column_names(
    Trial.id,
    Trial.arm,
    Trial.task_id,
    Trial.variant,
    Trial.trial_index,
    Trial.cluster,
    Trial.task_class,
    Trial.status,
    Trial.passed,
    Trial.confidence,
    Trial.cost_usd,
    Trial.latency_s,
)


@dataclass
class ArmTask:
    """One arm's trials of one task."""

    n: int = 0
    passed: int = 0
    unresolved: int = 0
    outcomes: dict[tuple[int, str], int] = field(default_factory=dict)
    """(trial_index, variant) -> 1/0 for resolved trials (failure-denominator for unresolved)."""
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
class RunRows:
    """The trial columns of one run, and the arms' roles."""

    run_id: str
    cols: dict[str, list]
    arms: list[str]
    baseline: str | None
    candidate: str | None
    aa_arm: str | None
    denominator: str = "failure"
    confidence: float = 0.95

    def __len__(self) -> int:
        return len(self.cols.get("id", []))


def load_rows(store, report: Report) -> RunRows:
    """The run's trial columns, with arm roles and policy from the report data."""
    run_id = report["run"]["id"]
    cols = store.trial_columns(run_id, TRIAL_COLUMNS)
    roles = report.get("roles") or {}
    settings = report.get("settings")
    arms = list(report.get("arms") or {})
    for a in cols.get("arm", []):
        if a not in arms:
            arms.append(a)
    return RunRows(
        run_id=run_id,
        cols=cols,
        arms=arms,
        baseline=roles.get("baseline"),
        candidate=roles.get("candidate"),
        aa_arm=roles.get("aa"),
        denominator=settings["denominator"] if settings else "failure",
        confidence=settings["confidence"] if settings else 0.95,
    )


def task_rows(rr: RunRows) -> list[TaskRow]:
    """Per-task, per-arm counts with the first (failing) trial id, and paired discordance."""
    out: dict[str, TaskRow] = {}
    c = rr.cols
    for i in range(len(rr)):
        tid = c["task_id"][i]
        row = out.get(tid)
        if row is None:
            row = out[tid] = TaskRow(tid, c["task_class"][i] or "", c["cluster"][i] or "")
        at = row.arms.get(c["arm"][i])
        if at is None:
            at = row.arms[c["arm"][i]] = ArmTask()
        status = c["status"][i]
        resolved = status in RESOLVED
        trial_id = c["id"][i]
        if at.first is None:
            at.first = trial_id
        if not resolved:
            at.unresolved += 1
            if rr.denominator == "exclude":
                continue
        ok = bool(c["passed"][i]) and resolved
        at.n += 1
        at.passed += ok
        at.outcomes[(c["trial_index"][i], c["variant"][i] or "")] = int(ok)
        if not ok and at.first_fail is None:
            at.first_fail = trial_id
    if rr.baseline and rr.candidate:
        for row in out.values():
            b, k = row.arms.get(rr.baseline), row.arms.get(rr.candidate)
            if b and k and b.n and k.n:
                row.delta = k.rate - b.rate
                row.discordant = sum(
                    1 for key, y in b.outcomes.items() if key in k.outcomes and k.outcomes[key] != y
                )
    return sorted(out.values(), key=lambda r: r.task_id)


def error_kinds(store, run_id: str) -> list[ErrorKind]:
    """Unresolved trials by arm, status and error kind, most frequent first."""
    from sqlalchemy import text

    kinds: dict[tuple[str, str, str], int] = defaultdict(int)
    with store.engine.connect() as conn:
        for arm, status, error in conn.execute(
            text(
                "SELECT arm, status, error FROM trials WHERE run_id = :r "
                "AND status NOT IN ('passed', 'failed')"
            ),
            {"r": run_id},
        ):
            kinds[(arm, status, error_kind(error))] += 1
    return [
        {"arm": a, "status": s, "kind": k, "count": n}
        for (a, s, k), n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))
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
