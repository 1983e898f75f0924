"""The A/A noise floor: the baseline against its own interleaved copy, and when it is degenerate.

Eval-harness guide: an A/A arm's true delta is zero, so what it reports is the run's noise. A floor of
exactly zero (the copy agreed with its baseline on every task) is not a measurement of noise:
it comes from common random numbers, caching or a deterministic agent, and proves nothing
about false positives. Every view flags it from the record built here.
"""

from __future__ import annotations

from harness.release.records import Comparison, NoiseFloor
from harness.release.run_config import StoredConfig

DEGENERATE = (
    "degenerate A/A floor: the copy agreed with its baseline on every task (exactly zero), "
    "so it measures no noise and says nothing about false positives"
)
CRN = (
    "degenerate A/A floor: the arms share their random numbers (common_random_numbers: true), "
    "so the copy repeats its baseline by construction"
)


def uses_common_random_numbers(config: StoredConfig | None, arm: str) -> bool:
    """Does the stored run config give ``arm`` shared trial random numbers?"""
    suite = (config or {}).get("suite") or {}
    for a in suite.get("arms") or []:
        if isinstance(a, dict) and a.get("name") == arm:
            return bool((a.get("params") or {}).get("common_random_numbers"))
    return False


def noise_floor(
    comparison: Comparison, arm: str, *, common_random_numbers: bool = False
) -> NoiseFloor | None:
    """The A/A record every view prints: estimate with interval, n, unit, and the flags."""
    lo, hi = comparison.get("lo"), comparison.get("hi")
    if comparison.get("estimate") is None or lo is None or hi is None:
        return None
    signs = comparison["signs"]
    exact_zero = signs["improved"] == 0 and signs["worse"] == 0
    degenerate = exact_zero or common_random_numbers
    reason = CRN if common_random_numbers else DEGENERATE if exact_zero else None
    return {
        "arm": arm,
        "estimate": comparison["estimate"],
        "lo": lo,
        "hi": hi,
        "half_width": (hi - lo) / 2,
        "n": comparison["n"],
        "unit": comparison["unit"],
        "n_clusters": comparison["n_clusters"],
        "method": comparison["method"],
        "table": comparison["table"],
        "signs": signs,
        "p_value": comparison["p_value"],
        "excludes_zero": lo > 0 or hi < 0,
        "degenerate": degenerate,
        "degenerate_reason": reason,
    }
