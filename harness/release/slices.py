"""Slices as screens: per-class paired deltas that say "look here", never the verdict.

Eval-harness guide: with eight classes tested at 5% a third of clean runs show a false alarm
somewhere, so class comparisons get Holm-adjusted p-values and only ever trigger a look
(a follow-up run with repeats on that class). A flat headline can hide one class collapsing
while another improves by the same amount; that pattern is called out, not averaged away.
"""

from __future__ import annotations

import numpy as np

from harness.analysis.table import Trials
from harness.release.records import ClassScreen, Screens

SCREEN_P = 0.2
"""Unadjusted one-sided p at or below which a class counts as "moved" for the opposite-moves
callout (eval-harness guide: a 3–0 swing is p = 0.125, not a result alone, but two opposite ones are
worth repeats)."""

CLASS_MIN_CLUSTERS = 8
"""A class screen's delta gets an interval only with at least this many clusters inside the
class. Below it the per-class clusters are few and of very unequal size, the Bell-McCaffrey df
fall to 1–3 and the interval over-covers (97.9% at 6 unequal clusters in
``benchmarks/coverage.py``). CR2 on C − 1 df lands near 95% inside classes but covers 91%
for the headline delta at 6 unequal clusters (300-replication probe), so it cannot be the
one method for both; the slice shows no interval instead. The estimate, the task signs and the
p-values still stand. Counted only when the suite is clustered (fewer clusters than tasks)."""


def class_refusal(n_clusters: int) -> str:
    """The warning a class slice carries in place of an interval (below CLASS_MIN_CLUSTERS)."""
    return (
        f"no interval: only {n_clusters} clusters in this class (fewer than "
        f"{CLASS_MIN_CLUSTERS}), too few to hold a 95% interval's level "
        "(benchmarks/coverage.py); read the task signs and p-values"
    )


# long: the Holm adjustment, the opposite-move rule and the look-here flags read the same per-class
#   list in turn.
def class_screens(
    trials_a: Trials,
    trials_b: Trials,
    *,
    alpha: float = 0.05,
    cluster_key: str = "cluster",
    denominator: str = "failure",
    weights: bool = True,
    headline_flat: bool = True,
    phase_one_trials: int | None = None,
) -> Screens:
    """Per-class paired comparisons (candidate − baseline) with Holm-adjusted p-values.

    Returns {"classes": [...], "holm_alpha", "look_here": [classes], "opposite_moves":
    {"up": [...], "down": [...]} | None, "note"}. ``look_here`` holds classes whose
    Holm-adjusted two-sided p is at most ``alpha`` or that take part in opposite moves.
    ``headline_flat`` says the primary comparison showed no clear move (only then are
    opposite moves called out as hidden by the headline).
    """
    from harness.release.compare import paired_comparison
    from harness.stats import holm_adjust

    by_a, by_b = _by_class(trials_a), _by_class(trials_b)
    clustered = _clustered(trials_a, cluster_key)
    out: list[ClassScreen] = []
    for cls in sorted(set(by_a) & set(by_b)):
        c = paired_comparison(
            by_a[cls],
            by_b[cls],
            confidence=1 - alpha,
            cluster_key=cluster_key,
            denominator=denominator,
            weights=weights,
            phase_one_trials=phase_one_trials,
        )
        base, cand = c["baseline"], c["candidate"]
        if not c["n_tasks"] or base is None or cand is None:
            continue
        lo, hi, warning = c["lo"], c["hi"], c["interval_warning"]
        if clustered and c["n_clusters"] < CLASS_MIN_CLUSTERS:
            lo = hi = None
            warning = class_refusal(c["n_clusters"])
        out.append(
            {
                "class": cls,
                "n_tasks": c["n_tasks"],
                "n": c["n"],
                "unit": c["unit"],
                "n_clusters": c["n_clusters"],
                "baseline": base["rate"],
                "candidate": cand["rate"],
                "baseline_interval": [base["lo"], base["hi"]],
                "candidate_interval": [cand["lo"], cand["hi"]],
                "estimate": c["estimate"],
                "lo": lo,
                "hi": hi,
                "method": c["method"] if lo is not None else "interval refused (too few clusters)",
                "warning": warning,
                "table": c["table"],
                "signs": c["signs"],
                "p_value": c["p_value"],
                "p_values": c["p_values"],
            }
        )
    if out:
        adjusted = holm_adjust([s["p_value"] for s in out])
        for s, p in zip(out, adjusted, strict=True):
            s["p_holm"] = float(p)
    up = [s["class"] for s in out if s["p_values"]["greater"] <= SCREEN_P]
    down = [s["class"] for s in out if s["p_values"]["less"] <= SCREEN_P]
    opposite = {"up": up, "down": down} if (up and down) else None
    look = [s["class"] for s in out if s["p_holm"] <= alpha]
    if opposite:
        look += [c for c in up + down if c not in look]
    for s in out:
        s["look_here"] = s["class"] in look
    note = None
    if opposite:
        note = (
            f"opposite moves: {', '.join(up)} up and {', '.join(down)} down"
            + (" under a flat headline" if headline_flat else "")
            + "; each alone is not a result, together they are where to spend repeats"
        )
    return {
        "classes": out,
        "holm_alpha": alpha,
        "look_here": look,
        "opposite_moves": opposite,
        "note": note,
        "label": "screens: 'look here' means a follow-up run on that class, never the verdict",
        "confidence": 1 - alpha,
        "thresholds": (
            f"look here: Holm-adjusted two-sided p ≤ {alpha:g}, or a class in opposite moves "
            f"(one-sided p ≤ {SCREEN_P:g} up in one class and down in another)"
        ),
    }


def _clustered(trials: Trials, cluster_key: str) -> bool:
    """Whether the suite's tasks share clusters (fewer cluster labels than tasks); a task
    without a cluster label is its own cluster, as in the paired comparison."""
    if cluster_key == "task":
        return False
    tasks = trials.task_ids
    clusters = trials.per_task("cluster").tolist()
    labels = {t: c or t for t, c in zip(tasks.tolist(), clusters, strict=True)}
    return len(set(labels.values())) < len(labels)


def _by_class(trials: Trials) -> dict[str, Trials]:
    """The trials split by task class (a missing class is 'default')."""
    names = trials.task_class.names.tolist()
    codes: dict[str, list[int]] = {}
    for code in np.unique(trials.task_class.codes).tolist():
        codes.setdefault(names[code] or "default", []).append(code)
    return {
        name: trials.where(np.isin(trials.task_class.codes, cs))
        for name, cs in sorted(codes.items())
    }
