"""The gate's checks that come before any statistics: must-never classes (asserted, never
tested), unresolved coverage (too many trials without a verdict means no clean verdict) and
the arms' balance in retried and unresolved trials (an imbalance makes a may-ship verdict
inconclusive)."""

from __future__ import annotations

import numpy as np

from harness.analysis.table import FAILED_CODE, Trials
from harness.release.records import (
    ArmCoverage,
    Balance,
    BalanceGap,
    BalanceShare,
    Coverage,
    MustNever,
    MustNeverCheck,
)
from harness.release.run_config import StoredConfig


def _classes(trials: Trials) -> np.ndarray:
    """Each trial's task class (a missing one is 'default')."""
    names = np.array([n or "default" for n in trials.task_class.names.tolist()], dtype=object)
    return names[trials.task_class.codes]


def _names(trials: Trials, mask: np.ndarray) -> list[str]:
    """'task#index' of the trials ``mask`` selects, sorted, each once."""
    tasks = trials.task.values()[mask].tolist()
    return sorted(
        {f"{t}#{i}" for t, i in zip(tasks, trials.trial_index[mask].tolist(), strict=True)}
    )


def flagged_tasks(config: StoredConfig) -> set[str]:
    """The tasks a run's stored config flags ``must_never: true``."""
    return {t for t, d in (config.get("tasks") or {}).items() if d.get("must_never")}


def must_never_checks(
    trials_b: Trials, classes: list[str], flagged_tasks: set[str]
) -> list[MustNeverCheck]:
    """Each must-never class (and the tasks flagged ``must_never``): any failure of the
    candidate there is a violation; a trial without a verdict leaves it unverified. The
    message gives counts as fractions of the group's trials ("2/5 trials failed")."""
    checks: list[MustNeverCheck] = []
    for name, mask in _groups(trials_b, classes, flagged_tasks).items():
        n = int(np.count_nonzero(mask))
        failed = _names(trials_b, mask & (trials_b.status == FAILED_CODE))
        unresolved = _names(trials_b, mask & ~trials_b.resolved)
        status = "violated" if failed else "unverified" if (unresolved or not n) else "held"
        checks.append(
            {
                "name": f"must-never: {name}",
                "status": status,
                "trials": n,
                "failures": failed,
                "unresolved": unresolved,
                "message": _must_never_message(n, failed, unresolved),
            }
        )
    return checks


def must_never_record(
    arm: str | None, trials_b: Trials, classes: list[str], flagged_tasks: set[str]
) -> MustNever:
    """The checks of ``arm`` (``must_never_checks``) with the trials they cover counted
    once: what the report puts beside the fixed/broke table, which counts a task failed 2
    of 5 times in a must-never class as passed (its rate is 60%)."""
    covered = np.zeros(len(trials_b), dtype=bool)
    for mask in _groups(trials_b, classes, flagged_tasks).values():
        covered |= mask
    return {
        "arm": arm,
        "trials": int(np.count_nonzero(covered)),
        "failed": int(np.count_nonzero(covered & (trials_b.status == FAILED_CODE))),
        "checks": must_never_checks(trials_b, classes, flagged_tasks),
    }


def _groups(trials_b: Trials, classes: list[str], flagged_tasks: set[str]) -> dict[str, np.ndarray]:
    """The must-never groups by name: each class, then the flagged tasks."""
    of_class = _classes(trials_b)
    groups = {f"class {c}": of_class == c for c in classes}
    if flagged_tasks:
        groups["tasks marked must_never"] = np.isin(trials_b.task.values(), sorted(flagged_tasks))
    return groups


def _must_never_message(n: int, failed: list[str], unresolved: list[str]) -> str:
    if not n:
        return "no trials of the candidate in this class"
    if failed:
        shown = ", ".join(failed[:10]) + (", ..." if len(failed) > 10 else "")
        return f"{len(failed)}/{n} trials failed ({len(failed) / n:.1%}): {shown}"
    if unresolved:
        return f"{len(unresolved)}/{n} trials without a verdict ({len(unresolved) / n:.1%})"
    return f"0/{n} trials failed (asserted, not tested)"


def coverage_check(arms: dict[str, Trials], limit: float) -> Coverage:
    """The share of trials without a verdict per arm (and per class where any) against
    ``limit``: missing evidence is no verdict, never a failure of the agent."""
    shares: dict[str, ArmCoverage] = {}
    by_class: dict[str, dict[str, tuple[int, int]]] = {}
    for arm, t in arms.items():
        unresolved = ~t.resolved
        shares[arm] = {
            "trials": len(t),
            "unresolved": int(unresolved.sum()),
            "share": float(unresolved.sum()) / len(t) if len(t) else 1.0,
        }
        of_class = _classes(t)
        for cls in dict.fromkeys(of_class.tolist()):
            mask = of_class == cls
            by_class.setdefault(cls, {})[arm] = (int((unresolved & mask).sum()), int(mask.sum()))
    worst = max((a["share"] for a in shares.values()), default=1.0)
    return {
        "name": "unresolved coverage",
        "limit": limit,
        "arms": shares,
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
    baseline: tuple[str, Trials] | None,
    candidate: tuple[str, Trials],
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
        "retried": lambda t: t.attempts > 1,
        "unresolved": lambda t: ~t.resolved,
    }
    for what, has in tests.items():
        shares = {
            arm: _share(int(np.count_nonzero(has(t))), len(t), confidence)
            for arm, t in (baseline, candidate)
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
