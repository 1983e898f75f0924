"""What the report page needs beyond the report data: per-task rows with trial ids, and
fallbacks for sections the report data does not carry (yet).

The report data (``harness.report.cli.load_report``) is the source of every number it
holds; the viewer computes a section here only when that section is absent, with the same
pure functions from ``harness.stats`` and the method named next to the numbers. Rows come
from ``Store.trial_columns`` (one query, columns as lists), so 50,000 trials cost one pass.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

RESOLVED = ("passed", "failed")

TRIAL_COLUMNS = [
    "id",
    "arm",
    "task_id",
    "variant",
    "trial_index",
    "cluster",
    "task_class",
    "status",
    "passed",
    "confidence",
    "cost_usd",
    "latency_s",
]


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

    cols: dict[str, list]
    arms: list[str]
    baseline: str | None
    candidate: str | None
    aa_arm: str | None
    denominator: str = "failure"
    confidence: float = 0.95

    def __len__(self) -> int:
        return len(self.cols.get("id", []))


def arm_roles(run) -> tuple[str | None, str | None, str | None]:
    """(baseline, candidate, A/A arm) from the suite's ``report.primary`` or the arm order.

    The A/A arm is another arm configured exactly like the baseline (same agent, params and
    model): the difference between the two is noise, the floor any real delta must clear.
    """
    suite = (run.config or {}).get("suite", {}) if isinstance(run.config, dict) else {}
    primary = (suite.get("report") or {}).get("primary") or {}
    arms = list(run.arms or [])
    baseline = primary.get("baseline") or (arms[0] if len(arms) >= 2 else None)
    candidate = primary.get("candidate") or next((a for a in arms if a != baseline), None)
    specs = {a.get("name"): a for a in suite.get("arms", []) if isinstance(a, dict)}

    def shape(name: str | None) -> tuple:
        s = specs.get(name) or {}
        return (s.get("agent"), repr(s.get("params")), repr(s.get("model")))

    aa = None
    if baseline and baseline in specs:
        for a in arms:
            if a not in (baseline, candidate) and shape(a) == shape(baseline):
                aa = a
                break
    if aa is None:
        aa = next(
            (
                a
                for a in arms
                if a not in (baseline, candidate) and a.lower().endswith(("-aa", "_aa", ".aa"))
            ),
            None,
        )
    return baseline, (candidate if baseline else None), aa


def load_rows(store, run) -> RunRows:
    cols = store.trial_columns(run.id, TRIAL_COLUMNS)
    suite = (run.config or {}).get("suite", {}) if isinstance(run.config, dict) else {}
    baseline, candidate, aa = arm_roles(run)
    arms = list(run.arms or [])
    for a in cols.get("arm", []):
        if a not in arms:
            arms.append(a)
    return RunRows(
        cols=cols,
        arms=arms,
        baseline=baseline,
        candidate=candidate,
        aa_arm=aa,
        denominator=suite.get("denominator", "failure"),
        confidence=(suite.get("report") or {}).get("confidence", 0.95),
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


# --------------------------------------------------------------------------- fallbacks
def per_task_counts(
    rows: list[TaskRow], arm: str
) -> tuple[list[str], list[int], list[int], list[str]]:
    ids, n, c, clusters = [], [], [], []
    for r in rows:
        at = r.arms.get(arm)
        if at and at.n:
            ids.append(r.task_id)
            n.append(at.n)
            c.append(at.passed)
            clusters.append(r.cluster or r.task_id)
    return ids, n, c, clusters


def passk_prediction(
    rows: list[TaskRow],
    arm: str,
    k_max: int,
    confidence: float,
    metrics: tuple[str, ...] = ("pass_hat", "pass_at"),
) -> dict[str, Any] | None:
    """Beta-binomial pass^k and/or pass@k for k = 1..k_max with cluster-bootstrap intervals."""
    import numpy as np

    from harness.stats import predict_pass_hat_k

    _, n, c, clusters = per_task_counts(rows, arm)
    if len(n) < 3 or max(n) < 2:
        return None  # one trial per task says nothing about the spread of task rates
    ks = list(range(1, k_max + 1))
    out: dict[str, Any] = {"method": "beta-binomial fit (MLE), cluster bootstrap, 200 resamples"}
    for metric, key in (("pass_hat", "pass_hat_k"), ("pass_at", "pass_at_k")):
        if metric not in metrics:
            out[key] = []
            continue
        try:
            p = predict_pass_hat_k(
                np.asarray(c),
                np.asarray(n),
                ks,
                n_boot=200,
                rng=0,
                confidence=confidence,
                clusters=clusters,
                metric=metric,
            )
        except (ValueError, FloatingPointError):
            return None
        out[key] = [
            {"k": k, "estimate": float(p.estimate[j]), "lo": float(p.lo[j]), "hi": float(p.hi[j])}
            for j, k in enumerate(ks)
        ]
    return out


def class_deltas(
    rr: RunRows, rows: list[TaskRow], other: str | None = None
) -> dict[str, Any] | None:
    """Paired per-class deltas (``other`` or candidate − baseline) over tasks both arms ran.

    Per-task rate differences, mean per class with a cluster-robust normal interval
    (``harness.stats.paired_difference``); classes with fewer than two tasks get no interval.
    """
    from harness.stats import paired_difference

    a, b = other or rr.candidate, rr.baseline
    if not a or not b:
        return None
    groups: dict[str, list[tuple[float, float, str]]] = defaultdict(list)
    for r in rows:
        x, y = r.arms.get(a), r.arms.get(b)
        if x and y and x.n and y.n:
            groups[r.task_class or "(none)"].append((x.rate, y.rate, r.cluster or r.task_id))
    if not groups:
        return None

    def diff(items: list[tuple[float, float, str]]) -> dict[str, Any]:
        xs, ys, cl = zip(*items, strict=True)
        est = sum(xs) / len(xs) - sum(ys) / len(ys)
        out = {"estimate": est, "n": len(items), "lo": None, "hi": None}
        if len(items) >= 2 and len(set(cl)) >= 2:
            d = paired_difference(list(xs), list(ys), rr.confidence, clusters=list(cl))
            if math.isfinite(d.se):
                out["lo"], out["hi"] = float(d.ci[0]), float(d.ci[1])
        return out

    all_items = [i for g in groups.values() for i in g]
    return {
        "baseline": b,
        "candidate": a,
        "overall": diff(all_items),
        "by_class": [{"class": k, **diff(v)} for k, v in sorted(groups.items())],
        "method": "mean of per-task rate differences, cluster-robust normal interval",
        "confidence": rr.confidence,
    }


def cost_points(rr: RunRows) -> dict[str, dict[str, Any]]:
    """Mean cost and latency per trial per arm (trials with a known cost only)."""
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0, 0, 0.0, 0, 0])
    c = rr.cols
    for i in range(len(rr)):
        s = sums[c["arm"][i]]
        s[4] += 1
        cost = c["cost_usd"][i]
        if cost is not None:
            s[0] += cost
            s[1] += 1
        if c["latency_s"][i]:
            s[2] += c["latency_s"][i]
            s[3] += 1
    return {
        arm: {
            "mean_cost_usd": s[0] / s[1] if s[1] else None,
            "cost_known": s[1],
            "trials": s[4],
            "mean_latency_s": s[2] / s[3] if s[3] else None,
        }
        for arm, s in sums.items()
    }


def calibration(rr: RunRows, bins: int = 10) -> dict[str, Any] | None:
    """Reliability bins of stated confidence against success, per arm (resolved trials)."""
    from harness.stats import expected_calibration_error

    c = rr.cols
    per_arm: dict[str, tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    for i in range(len(rr)):
        conf = c["confidence"][i]
        if conf is None or c["status"][i] not in RESOLVED:
            continue
        xs, ys = per_arm[c["arm"][i]]
        xs.append(float(conf))
        ys.append(1.0 if c["passed"][i] else 0.0)
    if not per_arm:
        return None
    out: dict[str, Any] = {"bins": bins, "arms": {}}
    for arm, (xs, ys) in per_arm.items():
        cnt, sc, sy = [0] * bins, [0.0] * bins, [0.0] * bins
        for x, y in zip(xs, ys, strict=True):
            b = min(bins - 1, max(0, int(x * bins)))
            cnt[b] += 1
            sc[b] += x
            sy[b] += y
        out["arms"][arm] = {
            "n": len(xs),
            "ece": expected_calibration_error(xs, ys, bins),
            "bins": [
                {"confidence": sc[j] / cnt[j], "success": sy[j] / cnt[j], "n": cnt[j]}
                for j in range(bins)
                if cnt[j]
            ],
        }
    return out


def infra_breakdown(store, run_id: str) -> dict[str, Any]:
    """Unresolved trials by arm, status and error kind; crashed attempts by outcome."""
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
        attempts = conn.execute(
            text(
                "SELECT arm, outcome, COUNT(*) FROM attempts WHERE run_id = :r "
                "AND outcome != 'ok' GROUP BY arm, outcome"
            ),
            {"r": run_id},
        ).all()
    return {
        "unresolved": [
            {"arm": a, "status": s, "kind": k, "count": n}
            for (a, s, k), n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))
        ],
        "failed_attempts": [{"arm": a, "outcome": o, "count": n} for a, o, n in attempts],
    }


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
