"""History rows as estimates of one quantity: the full suite's expected success rate.

A nightly subset run (``subset:``) and a full run of the same suite estimate the same number,
each with its own standard error: a full run's is its trials' noise over the fixed suite, a
subset run's the draw's (design or 2PL model, ``harness.analysis.full_suite``). So a move
between a full run and a subset run, or between two subset runs on different draws, is the
difference of the two estimates with their SEs combined as independent (conservative where the
runs share tasks), not a refusal to pair; and a ``--sequential`` night of a subset run is its
full-suite estimate with its SE.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any

from harness.analysis.table import Trials
from harness.release.records import Fingerprint, Headline, HistoryArm, Move


def subset_headline(trials: Trials, draw: Any, confidence: float, denominator: str) -> Headline:
    """A row's full-suite estimate, its SE as such (``suite_se``) and which kind of run it
    is: a subset run's full-suite estimate (as its report shows) in place of the rate over
    the tasks it ran, or a full run's trial-noise SE over its tasks."""
    from harness.analysis.full_suite import full_run_se, full_suite

    if not draw:
        return Headline(
            basis="full run", suite_se=full_run_se(trials, denominator), subset_method=None
        )
    est = full_suite(trials.originals(), draw, confidence, denominator)
    out = Headline(
        basis=est.get("label") or "subset",
        subset_method=draw.get("method"),
        suite_tasks=len(draw.get("population") or []),
        suite_se=est.get("se"),
    )
    if est.get("estimate") is None:
        return out
    return out | Headline(
        estimate=est["estimate"], rate=est["estimate"], lo=est.get("lo"), hi=est.get("hi")
    )


def estimated_tasks(fp: Fingerprint, draw: Any) -> list[str]:
    """The suite tasks a run's estimate is about: a subset run's full population."""
    if draw:
        return sorted(p["id"] for p in draw.get("population") or [])
    return sorted(fp["tasks"])


def task_hashes(config: Any) -> dict[str, str]:
    """Task id → hash of the task as a stored run config ran it (``config["tasks"]``)."""
    from harness.config.subset import task_hash

    return {t: task_hash(doc) for t, doc in ((config or {}).get("tasks") or {}).items()}


def why_not_same_quantity(
    fa: Fingerprint, draw_a: Any, fb: Fingerprint, draw_b: Any, hashes: tuple[Any, Any]
) -> list[str]:
    """Why two runs (at least one a subset run) do not estimate the same full-suite
    quantity: different suite tasks, a task changed between them (for an anchor run: since
    its fit, ``stale_reason``), or graders or images beyond the subset's share. ``hashes``:
    each run's ``task_hashes``."""
    from harness.config.subset import stale_reason

    out = []
    ta, tb = set(estimated_tasks(fa, draw_a)), set(estimated_tasks(fb, draw_b))
    if ta != tb:
        out.append(f"different suite tasks (+{len(tb - ta)} / -{len(ta - tb)})")
    ha, hb = hashes
    fitted = [(d["fit"], h) for d, h in ((draw_a, hb), (draw_b, ha)) if (d or {}).get("fit")]
    if fitted and (stale := stale_reason(*fitted[0])):  # the other run's tasks vs the fit
        out.append(stale)
    elif changed := sorted(t for t in set(ha) & set(hb) if ha[t] != hb[t]):
        more = f" and {len(changed) - 1} more" if len(changed) > 1 else ""
        out.append(f"task '{changed[0]}'{more} changed between the runs")
    for key, what in (("graders", "graders"), ("images", "images")):
        a, b = set(fa[key]), set(fb[key])  # type: ignore[literal-required]
        if not (a <= b or b <= a):
            out.append(f"different {what}")
    return out


def estimate_move(prev: HistoryArm, now: HistoryArm, from_run: str, level: float) -> Move:
    """The move between two estimates of the same full-suite rate (unpaired): their
    difference, SEs combined as independent."""
    a, b = prev.get("estimate"), now.get("estimate")
    sa, sb = prev.get("suite_se"), now.get("suite_se")
    how = f"{_kind(prev)} → {_kind(now)}"
    if a is None or b is None or sa is None or sb is None:
        return Move(from_run=from_run, paired=False, cannot_pair=[f"no estimate ({how})"])
    d, se = b - a, math.hypot(sa, sb)
    z = NormalDist().inv_cdf(0.5 + level / 2)
    lo, hi = d - z * se, d + z * se
    return Move(
        from_run=from_run,
        paired=False,
        estimate=d,
        lo=lo,
        hi=hi,
        se=se,
        n=min(int(prev.get("n_tasks") or 0), int(now.get("n_tasks") or 0)),
        unit="task",
        level=level,
        call="regression" if hi < 0 else "improvement" if lo > 0 else "none",
        beyond_noise_floor=None,
        basis=f"difference of full-suite estimates ({how}), SEs combined as independent",
    )


def _kind(row: HistoryArm) -> str:
    """'full run' or 'random 10 of 40': which estimate a row holds."""
    if not row.get("subset_method"):
        return "full run"
    return f"{row['subset_method']} {row.get('n_tasks')} of {row.get('suite_tasks')}"


def night(row: HistoryArm) -> tuple[float, float] | None:
    """A row's ``--sequential`` night as an estimate of the full-suite rate: (estimate, SE)."""
    est, se = row.get("estimate"), row.get("suite_se")
    if est is None or se is None or not se > 0:
        return None
    return float(est), float(se)
