"""The gate's checks that come before any statistics: must-never classes (asserted, never
tested), unresolved coverage (too many trials without a verdict means no clean verdict) and
the arms' balance in retried and unresolved trials (an imbalance makes a may-ship verdict
inconclusive)."""

from __future__ import annotations

from collections import defaultdict

from harness.errors import RESOLVED
from harness.release.records import (
    ArmCoverage,
    Balance,
    BalanceGap,
    BalanceShare,
    Coverage,
    MustNeverCheck,
    TrialRow,
)


def must_never_checks(
    rows_b: list[TrialRow], classes: list[str], flagged_tasks: set[str]
) -> list[MustNeverCheck]:
    """Each must-never class (and the tasks flagged ``must_never``): any failure of the
    candidate there is a violation; a trial without a verdict leaves it unverified."""
    checks: list[MustNeverCheck] = []
    groups: dict[str, list[TrialRow]] = {f"class {c}": [] for c in classes}
    if flagged_tasks:
        groups["tasks marked must_never"] = []
    for r in rows_b:
        cls = r.get("task_class") or "default"
        if cls in classes:
            groups[f"class {cls}"].append(r)
        if r["task_id"] in flagged_tasks:
            groups["tasks marked must_never"].append(r)
    for name, rows in groups.items():
        failed = sorted(
            {f"{r['task_id']}#{r['trial_index']}" for r in rows if r["status"] == "failed"}
        )
        unresolved = sorted(
            {f"{r['task_id']}#{r['trial_index']}" for r in rows if r["status"] not in RESOLVED}
        )
        status = "violated" if failed else "unverified" if (unresolved or not rows) else "held"
        checks.append(
            {
                "name": f"must-never: {name}",
                "status": status,
                "trials": len(rows),
                "failures": failed,
                "unresolved": unresolved,
                "message": (
                    f"{len(failed)} failure(s) of the candidate: {', '.join(failed[:10])}"
                    if failed
                    else f"{len(unresolved)} trial(s) without a verdict"
                    if unresolved
                    else "no trials of the candidate in this class"
                    if not rows
                    else f"0 failures in {len(rows)} trials (asserted, not tested)"
                ),
            }
        )
    return checks


def coverage_check(rows: dict[str, list[TrialRow]], limit: float) -> Coverage:
    """The share of trials without a verdict per arm (and per class where any) against
    ``limit``: missing evidence is no verdict, never a failure of the agent."""
    arms: dict[str, ArmCoverage] = {}
    by_class: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for arm, rs in rows.items():
        unresolved = sum(1 for r in rs if r["status"] not in RESOLVED)
        arms[arm] = {
            "trials": len(rs),
            "unresolved": unresolved,
            "share": unresolved / len(rs) if rs else 1.0,
        }
        for r in rs:
            c = by_class[r.get("task_class") or "default"][arm]
            c[0] += r["status"] not in RESOLVED
            c[1] += 1
    worst = max((a["share"] for a in arms.values()), default=1.0)
    return {
        "name": "unresolved coverage",
        "limit": limit,
        "arms": arms,
        "by_class": {
            cls: {arm: {"unresolved": u, "trials": n} for arm, (u, n) in d.items()}
            for cls, d in sorted(by_class.items())
            if any(u for u, _ in d.values())
        },
        "worst_share": worst,
        "status": "ok" if worst <= limit else "exceeded",
    }


BALANCE_METHOD = (
    "Wilson score intervals per arm, Newcombe's hybrid score interval for the gap "
    "(trials of one task may be correlated)"
)


def balance_check(
    baseline: tuple[str, list[TrialRow]] | None,
    candidate: tuple[str, list[TrialRow]],
    bound: float,
    confidence: float,
) -> Balance:
    """Candidate − baseline in the share of retried trials (more than one attempt) and of
    trials without a verdict. A gap is an imbalance when it is larger than ``bound`` and its
    two-sided interval at ``confidence`` excludes 0: a gap inside the bound is tolerated, and
    one that noise explains is not called (simulated error rates: ``benchmarks/retry_balance.py``)."""
    out: Balance = {
        "name": "retry balance",
        "bound": bound,
        "confidence": confidence,
        "method": BALANCE_METHOD,
        "gaps": [],
        "status": "not applicable",
    }
    if baseline is None:
        return out
    tests = {
        "retried": lambda r: (r.get("attempts") or 1) > 1,
        "unresolved": lambda r: r["status"] not in RESOLVED,
    }
    for what, has in tests.items():
        shares = {
            arm: _share(sum(1 for r in rows if has(r)), len(rows), confidence)
            for arm, rows in (baseline, candidate)
        }
        b, c = shares[baseline[0]], shares[candidate[0]]
        gap = c["share"] - b["share"]
        lo = gap - ((c["share"] - c["lo"]) ** 2 + (b["hi"] - b["share"]) ** 2) ** 0.5
        hi = gap + ((c["hi"] - c["share"]) ** 2 + (b["share"] - b["lo"]) ** 2) ** 0.5
        entry: BalanceGap = {
            "what": what,
            "arms": shares,
            "gap": gap,
            "lo": lo,
            "hi": hi,
            "imbalanced": abs(gap) > bound and (lo > 0 or hi < 0),
        }
        out["gaps"].append(entry)
    out["status"] = "imbalanced" if any(g["imbalanced"] for g in out["gaps"]) else "ok"
    return out


def balance_reason(balance: Balance) -> str | None:
    """The sentence that turns a may-ship verdict inconclusive, or None when balanced."""
    off = [g for g in balance["gaps"] if g["imbalanced"]]
    if not off:
        return None
    parts = []
    for g in off:
        arms = ", ".join(
            f"{arm} {s['count']}/{s['trials']} ({s['share']:.1%})" for arm, s in g["arms"].items()
        )
        parts.append(
            f"{g['what']} share differs by {g['gap']:+.1%} [{g['lo']:+.1%}, {g['hi']:+.1%}] "
            f"({arms})"
        )
    return (
        "; ".join(parts)
        + f": beyond max_retry_gap {balance['bound']:.1%}, so the arms were not measured alike "
        "(retries and missing verdicts can hide failures): inconclusive"
    )


def _share(count: int, trials: int, confidence: float) -> BalanceShare:
    from harness.stats import wilson_interval

    lo, hi = wilson_interval(count, trials, confidence)
    return {
        "trials": trials,
        "count": count,
        "share": count / trials if trials else 0.0,
        "lo": float(lo),
        "hi": float(hi),
    }
