"""Which estimate a gate on a random subset run should judge (issue 27): false ships of a
candidate that is no better on the task population.

World: a suite of N = 200 tasks drawn from a population of tasks; per task the baseline's
rate p ~ U(0.1, 0.9) and the candidate's p + N(0, 0.25²) clipped to [0, 1] (no better on
average over the population, better or worse task by task); m trials per task and arm. A
subset run draws n tasks at random. Three gates, rule improvement, one-sided 95%: (a) the
full-suite estimate (``harness.stats.subset.subset_estimate`` on the paired differences,
finite-population correction: the suite's tasks as they are); (b) the paired subset
(task-level z on the n paired differences, no correction: tasks like these, which the
harness's paired comparison also asks); (c) the full run (the same on all N tasks). A
false ship is a lower bound above 0. The full-suite estimate is right for its own
question, how these 200 tasks would score, but a gate on it ships more often than the full
run it stands for, the more so as n nears N and the more trials shrink the noise.

Run: nice -n 10 python -m benchmarks.subset_gate [--reps 4000] (writes
benchmarks/results/subset_gate.json)
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from harness.stats import subset as sub

OUT = Path(__file__).resolve().parent / "results" / "subset_gate.json"
N = 200
NS = (20, 50, 100)
TRIALS = (2, 10)
Z = 1.6448536269514722


def cell(rng: np.random.Generator, n: int, m: int, reps: int) -> dict:
    ships = np.zeros(3)
    for _ in range(reps):
        pb = rng.uniform(0.1, 0.9, N)
        pc = np.clip(pb + rng.normal(0, 0.25, N), 0, 1)
        yb, yc = rng.binomial(m, pb) / m, rng.binomial(m, pc) / m
        d = yc - yb
        k = rng.choice(N, n, replace=False)
        within = (yb[k] * (1 - yb[k]) + yc[k] * (1 - yc[k])) / (m - 1)
        e = sub.subset_estimate(d[k], N, within, 0.90)
        paired = d[k].mean() - Z * d[k].std(ddof=1) / np.sqrt(n)
        full = d.mean() - Z * d.std(ddof=1) / np.sqrt(N)
        ships += np.array([e.lo > 0, paired > 0, full > 0])
    rates = ships / reps
    return {
        "n": n,
        "N": N,
        "trials": m,
        "reps": reps,
        "full_suite_estimate": float(rates[0]),
        "paired_subset": float(rates[1]),
        "full_run": float(rates[2]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    rows = [cell(rng, n, m, args.reps) for m in TRIALS for n in NS]
    data = {
        "command": f"python -m benchmarks.subset_gate --reps {args.reps} --seed {args.seed}",
        "rows": rows,
    }
    OUT.write_text(json.dumps(data, indent=2) + "\n")
    mc = 196 * (0.05 * 0.95 / args.reps) ** 0.5
    print(f"false ships at nominal 5% (± {mc:.1f} pts), {args.reps} runs a cell")
    for r in rows:
        print(
            f"n {r['n']:>3} of {N}, {r['trials']:>2} trials: full-suite estimate "
            f"{r['full_suite_estimate']:.1%}, paired subset {r['paired_subset']:.1%}, "
            f"full run {r['full_run']:.1%}"
        )


if __name__ == "__main__":
    main()
