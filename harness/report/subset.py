"""The report's subset section: the full suite's score per arm, what the subset saved and
what it cost in precision (only for a run on a declared subset)."""

from __future__ import annotations

import math
from typing import TypedDict

import numpy as np

from harness.analysis import Settings
from harness.analysis.full_suite import FullSuite, full_suite, full_suite_delta
from harness.analysis.roles import Roles
from harness.analysis.table import Trials
from harness.stats._util import z_two_sided


class Saving(TypedDict, total=False):
    """What the subset ran against what the full suite would have, at the same trials."""

    tasks: int
    tasks_full: int
    trials: int
    trials_full: int
    tokens: int | None
    tokens_full: float | None
    """Projected: this run's tokens per task times the full suite's tasks."""
    cost_usd: float | None
    cost_full_usd: float | None
    width: float | None
    """The full-suite estimate's interval width (averaged over arms)."""
    width_full: float | None
    """A full run's interval width for the same quantity (2·z·se_full, averaged over arms)."""


class SubsetSection(TypedDict, total=False):
    method: str
    label: str
    arms: dict[str, FullSuite]
    delta: FullSuite | None
    """Candidate minus baseline of the primary comparison, on the paired subset."""
    baseline: str | None
    candidate: str | None
    saving: Saving


def subset_section(
    trials: Trials,
    settings: Settings,
    roles: Roles,
    trials_per_task: int,
) -> SubsetSection | None:
    """None for a full run."""
    draw = settings.subset
    if draw is None:
        return None
    originals = trials.originals()
    arms = {
        name: full_suite(originals.of_arm(name), draw, settings.confidence, settings.denominator)
        for name in originals.arm.present()
    }
    delta = None
    base, cand = roles.baseline, roles.candidate
    if base is not None and cand is not None and base in arms and cand in arms:
        delta = full_suite_delta(
            originals.of_arm(base),
            originals.of_arm(cand),
            draw,
            settings.confidence,
            settings.denominator,
        )
    first = next(iter(arms.values()), FullSuite())
    return SubsetSection(
        method=draw.get("method", ""),
        label=first.get("label", ""),
        arms=arms,
        delta=delta,
        baseline=roles.baseline,
        candidate=roles.candidate,
        saving=_saving(
            originals, arms, trials_per_task, len(draw.get("population") or []), settings
        ),
    )


def _saving(
    originals: Trials,
    arms: dict[str, FullSuite],
    trials_per_task: int,
    total: int,
    settings: Settings,
) -> Saving:
    n_arms = max(1, len(arms))
    n = len(set(originals.task.values().tolist()))
    known = originals.usage_known.astype(bool) if len(originals) else np.zeros(0, bool)
    tokens = int((originals.tokens_in + originals.tokens_out)[known].sum()) if known.any() else None
    cost_known = ~np.isnan(originals.cost) if len(originals) else np.zeros(0, bool)
    cost = float(originals.cost[cost_known].sum()) if cost_known.any() else None
    scale = total / n if n else math.nan
    est_widths = [
        hi - lo
        for a in arms.values()
        if (hi := a.get("hi")) is not None and (lo := a.get("lo")) is not None
    ]
    z = z_two_sided(settings.confidence)
    full_widths = [2 * z * se for a in arms.values() if (se := a.get("se_full")) is not None]
    return Saving(
        tasks=n,
        tasks_full=total,
        trials=len(originals),
        trials_full=total * trials_per_task * n_arms,
        tokens=tokens,
        tokens_full=tokens * scale if tokens is not None else None,
        cost_usd=cost,
        cost_full_usd=cost * scale if cost is not None else None,
        width=float(np.mean(est_widths)) if est_widths else None,
        width_full=float(np.mean(full_widths)) if full_widths else None,
    )
