"""Benchmark: paired cluster bootstrap at report scale.

10,000 resamples over 10,000 tasks in 200 clusters, two arms (baseline and candidate),
percentile and BCa intervals for each arm and for the difference. Prints wall time and the
process's peak resident memory (resource.getrusage). Run: python benchmarks/bench_stats.py
"""

from __future__ import annotations

import argparse
import resource
import sys
import time

import numpy as np


def peak_rss_mib() -> float:
    """Peak resident set size of this process in MiB (ru_maxrss is KiB on Linux, B on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--clusters", type=int, default=200)
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    t0 = time.perf_counter()
    import harness.stats as hs

    import_s = time.perf_counter() - t0
    rss_after_import = peak_rss_mib()

    rng = np.random.default_rng(args.seed)
    clusters = rng.integers(0, args.clusters, args.tasks)
    difficulty = rng.normal(0.0, 1.0, args.clusters)[clusters] + rng.normal(0, 1, args.tasks)
    p_base = 1 / (1 + np.exp(-(0.5 + difficulty)))
    p_cand = 1 / (1 + np.exp(-(0.6 + difficulty)))
    trials = 5
    base = rng.binomial(trials, p_base) / trials  # per-task success rates
    cand = rng.binomial(trials, p_cand) / trials

    # Warm-up: the first call pays for lazy scipy imports and page faults.
    hs.paired_cluster_bootstrap(base, cand, clusters, n_resamples=100, rng=0, method="bca")
    hs.mean_ci_clustered(cand - base, clusters)

    for method in ("percentile", "bca"):
        runs = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            res = hs.paired_cluster_bootstrap(
                base, cand, clusters, n_resamples=args.resamples, rng=args.seed + 1, method=method
            )
            runs.append(time.perf_counter() - start)
        d = res.difference
        print(
            f"{method:>10}: median {np.median(runs):.3f} s, min {min(runs):.3f} s "
            f"over {args.repeats} runs | baseline {res.baseline.estimate:.4f} "
            f"[{res.baseline.ci[0]:.4f}, {res.baseline.ci[1]:.4f}] candidate "
            f"{res.candidate.estimate:.4f} diff {d.estimate:+.4f} [{d.ci[0]:+.4f}, {d.ci[1]:+.4f}]"
        )

    start = time.perf_counter()
    ci = hs.mean_ci_clustered(cand - base, clusters)
    clustered_s = time.perf_counter() - start
    print(
        f"clustered t interval on the difference: {clustered_s * 1e3:.2f} ms "
        f"[{ci.lo:+.4f}, {ci.hi:+.4f}]"
    )

    print(
        f"scale: {args.tasks} tasks x {args.clusters} clusters x {args.resamples} resamples "
        f"x 2 arms"
    )
    print(
        f"import harness.stats (numpy already loaded): {import_s:.3f} s "
        f"(peak RSS after import {rss_after_import:.1f} MiB)"
    )
    print(f"peak RSS: {peak_rss_mib():.1f} MiB")


if __name__ == "__main__":
    main()
