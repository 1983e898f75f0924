"""Infrastructure crashes and the rerun trap (agent-evaluation guide)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class RerunTrap:
    """Expected measured success rate under three crash policies, averaged over tasks."""

    true_rate: float
    """Mean p_j: what the agent actually achieves per attempt."""
    crash_as_failure: float
    """(1 − f)·p: crashes scored as failures."""
    rerun_crashes: float
    """(1 − f^{r+1})·p: up to r reruns of crashed trials only (the correct policy)."""
    rerun_failures: float
    """1 − (1 − (1 − f)p)^{r+1}: rerunning every failure, which measures pass@(r+1)."""


def rerun_trap(p: object, crash_rate: float, reruns: int = 1) -> RerunTrap:
    """Rates a harness reports for tasks of per-attempt success p when a share f crash.

    Agent-evaluation guide: p = 0.6, f = 0.05 gives 0.57 (crash counted as failure), 0.5985 (one rerun of
    crashes) and 0.815 (rerunning every failure: pass@2). Assumes crashes independent of the
    agent and of each other. ``p`` may be an array of per-task rates (averaged).
    """
    pp = np.atleast_1d(np.asarray(p, dtype=float))
    if np.any((pp < 0) | (pp > 1)) or not 0 <= crash_rate < 1 or reruns < 0:
        raise ValueError("need p in [0, 1], crash_rate in [0, 1) and reruns >= 0")
    f = crash_rate
    ran_and_passed = (1.0 - f) * pp
    return RerunTrap(
        true_rate=float(pp.mean()),
        crash_as_failure=float(ran_and_passed.mean()),
        rerun_crashes=float(((1.0 - f ** (reruns + 1)) * pp).mean()),
        rerun_failures=float((1.0 - (1.0 - ran_and_passed) ** (reruns + 1)).mean()),
    )
