"""Error spending over repeated looks: a nightly gate read run after run stays at its level.

When-not-to-ship guide: repeatedly checking a fixed-sample interval invalidates its advertised coverage;
use a procedure designed for repeated inspection. Each look k here is a fresh comparison
(tonight's trials), tested at its own level α_k with Σ_k α_k ≤ α, so by the union bound the
chance that any look of a season raises a false alarm is at most α whatever the looks'
dependence. Two schedules:

- planned season of L looks: α_k = α / L for k ≤ L, nothing after (Bonferroni);
- open-ended: α_k = α · 6 / (π² k²), which sums to α over infinitely many looks.
"""

from __future__ import annotations

import math

from harness.stats._util import check_probability


def alpha_for_look(alpha: float, look: int, planned_looks: int | None = None) -> float:
    """The error rate look ``look`` (1-based) may spend so that a whole season spends ``alpha``.

    Returns 0.0 for a look beyond a planned season (nothing left to spend).
    """
    check_probability(alpha, "alpha", open_interval=True)
    if look < 1:
        raise ValueError("look numbers start at 1")
    if planned_looks is not None:
        if planned_looks < 1:
            raise ValueError("planned_looks must be at least 1")
        return alpha / planned_looks if look <= planned_looks else 0.0
    return alpha * 6.0 / (math.pi**2 * look * look)


def schedule_name(planned_looks: int | None) -> str:
    """How the error rate is spent, in words, for reports."""
    if planned_looks is not None:
        return f"Bonferroni over a planned season of {planned_looks} looks (α/{planned_looks} each)"
    return "open-ended spending α·6/(π²k²) at look k (sums to α over any number of looks)"
