"""Coverage is a test: every interval path against planted clustered truths (fixed seed).

A fast version of ``benchmarks/coverage.py`` (same planted population, same code paths:
compare, the gate's one-sided bound, class screens, the report's success, stratified and
pass^2 sections, adaptive repeats read by phase one). Each check allows three binomial
standard errors of the coverage estimate around 95%; the benchmark's 1,000-replication table
in docs/release.md pins it to 93–97%.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchmarks.coverage import QUANTITIES, coverage_se, replicate, truths

REPS = 200
CELLS = [(12, False), (24, False)]


@pytest.fixture(scope="module", params=CELLS, ids=lambda c: f"{c[0]}-{'eq' if c[1] else 'uneq'}")
def results(request) -> list[dict]:
    k, equal = request.param
    rng = np.random.default_rng([20261201, k, int(equal)])
    t = truths()
    return [replicate(rng, k, equal, t) for _ in range(REPS)]


def test_every_path_covers_at_its_level(results: list[dict]) -> None:
    tol = 3 * coverage_se(REPS)
    for q in QUANTITIES:
        vals = np.array([r[q] for r in results], dtype=float)
        cov = float(np.nanmean(vals))
        assert abs(cov - 0.95) <= tol, (q, cov)


def test_adaptive_headline_is_unbiased_and_all_trials_is_not(results: list[dict]) -> None:
    head = np.array([r["_adaptive_headline"] for r in results])
    every = np.array([r["_adaptive_all_trials"] for r in results])
    se_head = head.std(ddof=1) / math.sqrt(REPS)
    se_every = every.std(ddof=1) / math.sqrt(REPS)
    assert abs(head.mean()) <= 3 * se_head
    assert every.mean() + 3 * se_every < 0  # repeats chosen by discordance shrink it


def test_class_screens_refuse_an_interval_below_the_minimum_clusters() -> None:
    """At 6 clusters every class holds at most 6: no interval (it would over-cover), a
    warning saying why, and the estimate and p-values kept; at 24 clusters intervals return."""
    from benchmarks.coverage import _rows, _trials, plant
    from harness.release.slices import CLASS_MIN_CLUSTERS, class_screens
    from harness.report.render.release import _screen_rows

    rng = np.random.default_rng(5)
    for k, refused in ((6, True), (24, False)):
        pl = plant(rng, k, equal=False)
        z, o = np.zeros(pl.p_a.size, np.int64), np.ones(pl.p_a.size, np.int64)
        sc = class_screens(
            _trials(_rows(pl, pl.p_a, o, rng, z)), _trials(_rows(pl, pl.p_b, o, rng, z))
        )
        for s, row in zip(sc["classes"], _screen_rows(sc), strict=True):
            assert (s["n_clusters"] < CLASS_MIN_CLUSTERS) == refused
            assert (s["lo"] is None and s["hi"] is None) == refused
            assert math.isfinite(s["estimate"]) and 0 <= s["p_value"] <= 1
            if refused:
                assert s["warning"].startswith(f"no interval: only {s['n_clusters']} clusters")
                assert "(no interval) ⚠" in row[4]
            else:
                assert s["lo"] < s["hi"] and "no interval" not in row[4]
