"""Nightly looks at an unchanged agent: how often a season raises a false "regression".

A season is ``--looks`` nights (default 60). Every night the same suite (``--tasks`` tasks in
``--clusters`` clusters, fixed planted per-task rates) runs the baseline and an unchanged
candidate, each drawing its trials independently, and the release gate (rule improvement,
one-sided 95%) reads the night's paired comparison; ``harness history`` reads the move of the
baseline from the previous night. A season is a false alarm when any look calls a
regression. Naive: every look at its own 95%. Protected: ``sequential: true`` (gate) and
``--sequential`` (history), the open-ended spending α·6/(π²k²) at look k
(``harness.stats.sequential``), and for the gate also the planned-season Bonferroni
(``looks: 60``). Both read the same simulated nights through the gate's and history's own
functions.

Run: python benchmarks/nightly.py [--seasons 300 --looks 60]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from harness.analysis.table import Trials


def _rows(rng, p: np.ndarray, clusters: np.ndarray) -> Trials:
    n = p.size
    passed = rng.random(n) < p
    return Trials.from_columns(
        {
            "task_id": np.array([f"t{i:03d}" for i in range(n)], dtype=object),
            "cluster": clusters,
            "task_class": np.full(n, "default", dtype=object),
            "weight": np.ones(n),
            "status": np.where(passed, "passed", "failed").astype(object),
            "trial_index": np.zeros(n, dtype=np.int64),
            "seed": np.arange(n),
            "variant": np.full(n, "", dtype=object),
        }
    )


def season(rng, looks: int, tasks: int, n_clusters: int) -> dict[str, bool]:
    """One season; returns whether each reading raised a false regression at any look."""
    from harness.config.models import GatePolicy
    from harness.release.compare import paired_comparison
    from harness.release.gate import _sequential, interval_level, primary_verdict
    from harness.release.history import _call
    from harness.stats import alpha_for_look

    naive = GatePolicy(rule="improvement")
    open_ended = GatePolicy(rule="improvement", sequential=True)
    planned = GatePolicy(rule="improvement", sequential=True, looks=looks)
    cl = np.array([f"c{i % n_clusters}" for i in range(tasks)], dtype=object)
    eta = rng.normal(0.5, 1.0, n_clusters)[np.arange(tasks) % n_clusters]
    p = 1 / (1 + np.exp(-(eta + rng.normal(0, 1.0, tasks))))
    alarms = dict.fromkeys(
        ("gate naive", "gate sequential", "gate planned 60", "history naive", "history sequential"),
        False,
    )
    previous = None
    for k in range(1, looks + 1):
        base, cand = _rows(rng, p, cl), _rows(rng, p, cl)
        for name, pol in (
            ("gate naive", naive),
            ("gate sequential", open_ended),
            ("gate planned 60", planned),
        ):
            if alarms[name]:
                continue
            seq = _sequential(pol, k)
            conf = seq["confidence"] if seq else pol.confidence
            c = paired_comparison(base, cand, confidence=interval_level(pol, conf))
            alarms[name] = primary_verdict(c, pol, conf)[0] == "regression"
        if previous is not None:
            for name, level in (
                ("history naive", 0.95),
                ("history sequential", 1 - alpha_for_look(0.05, k)),
            ):
                if not alarms[name]:
                    c = paired_comparison(previous, base, confidence=level)
                    alarms[name] = _call(c) == "regression"
        previous = base
    return alarms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seasons", type=int, default=300)
    parser.add_argument("--looks", type=int, default=60)
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--clusters", type=int, default=25)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    results = [season(rng, args.looks, args.tasks, args.clusters) for _ in range(args.seasons)]
    se = math.sqrt(0.05 * 0.95 / args.seasons)
    print(
        f"{args.seasons} seasons of {args.looks} nightly looks, unchanged agent, {args.tasks} "
        f"tasks in {args.clusters} clusters ({time.perf_counter() - t0:.0f} s); "
        f"SE at 5% ±{se:.1%}"
    )
    print("| reading | seasons with a false regression |")
    print("|---|---|")
    for name in results[0]:
        rate = float(np.mean([r[name] for r in results]))
        print(f"| {name} | {rate:.1%} |")


if __name__ == "__main__":
    main()
