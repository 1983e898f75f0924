"""Coverage of the judge-corrected pass rate and of the pairwise win rate, by simulation.

Corrected rate. Planted population (logit scale): a trial passes for people with
probability expit(μ + u_c + v_i), cluster effect u_c ~ N(0, 0.6²), task effect
v_i ~ N(0, 0.8²), μ solved (Gauss–Hermite) so the population pass rate π is the cell's.
A run has G clusters of 4 tasks, 3 trials each; a judge with planted sensitivity Se and
specificity Sp grades every trial. The calibration set is n trials drawn from the same
population, each with the judge's verdict and the true (human) label. Each replication
computes the judged rate's clustered estimate (``mean_estimate``, as the report does) and
the corrected interval (``corrected_rate``); coverage is the share of replications whose
interval holds π.

Win rate. Each task has a latent preference q = expit(d + u_c + v_i) for arm A; each pair
(one trial seed) is judged twice with the order swapped; with probability b a verdict
names whatever is shown first (planted position bias), else A with probability q. The
estimand is the expected swapped score (``swapped_outcome``), computed once per cell from
2 million simulated pairs; the interval is ``win_rate``'s over the run's G clusters.

Run: python -m benchmarks.judge_coverage [--reps 1000] [--quick]
Writes benchmarks/results/judge_coverage.json; python -m benchmarks.tables renders it into
docs/statistics.md.
"""

from __future__ import annotations

import argparse
import json
import time
from itertools import product
from pathlib import Path

import numpy as np

from harness.stats.estimate import mean_estimate
from harness.stats.judge_correction import Calibration, JudgeNotInformative, corrected_rate
from harness.stats.pairwise import win_rate

SD_CLUSTER, SD_TASK, TASKS, TRIALS = 0.6, 0.8, 4, 3
RESULT = Path(__file__).resolve().parent / "results" / "judge_coverage.json"


def _expit(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _mu_for(pi: float) -> float:
    """μ with E[expit(μ + N(0, σ²))] = π, σ² = σ_c² + σ_t² (Gauss–Hermite, bisection)."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(80)
    sd = float(np.hypot(SD_CLUSTER, SD_TASK))
    lo, hi = -10.0, 10.0
    for _ in range(80):
        mid = (lo + hi) / 2
        mean = float(np.sum(weights * _expit(mid + sd * nodes)) / np.sum(weights))
        lo, hi = (mid, hi) if mean < pi else (lo, mid)
    return (lo + hi) / 2


def corrected_cell(
    clusters: int, se: float, sp: float, n_cal: int, reps: int, pi: float = 0.6, seed: int = 0
) -> dict:
    gen = np.random.default_rng([seed, clusters, int(se * 100), int(sp * 100), n_cal])
    mu = _mu_for(pi)
    covered = undefined = 0
    widths = []
    labels = np.repeat(np.arange(clusters), TASKS)
    for _ in range(reps):
        p = _expit(
            mu
            + gen.normal(0, SD_CLUSTER, (clusters, 1))
            + gen.normal(0, SD_TASK, (clusters, TASKS))
        )
        truth = gen.random((clusters, TASKS, TRIALS)) < p[..., None]
        judged = np.where(truth, gen.random(truth.shape) < se, gen.random(truth.shape) >= sp)
        est = mean_estimate(judged.mean(axis=2).ravel(), labels)
        cal_p = _expit(mu + gen.normal(0, np.hypot(SD_CLUSTER, SD_TASK), n_cal))
        human = gen.random(n_cal) < cal_p
        verdict = np.where(human, gen.random(n_cal) < se, gen.random(n_cal) >= sp)
        try:
            c = corrected_rate(
                est.estimate, est.se or 0.0, Calibration.of(verdict, human), df=est.df
            )
        except JudgeNotInformative:
            undefined += 1
            continue
        covered += c.lo <= pi <= c.hi
        widths.append(c.hi - c.lo)
    done = reps - undefined
    return {
        "clusters": clusters,
        "sensitivity": se,
        "specificity": sp,
        "calibration": n_cal,
        "reps": reps,
        "coverage": covered / done if done else None,
        "mean width": float(np.mean(widths)) if widths else None,
        "undefined": undefined,
    }


def _pairs(gen: np.random.Generator, q: np.ndarray, bias: float) -> np.ndarray:
    """Swapped scores for pairs with preference q (any shape) and position bias b."""

    def verdict(a_first: bool) -> np.ndarray:
        follows = gen.random(q.shape) < bias
        picks_a = gen.random(q.shape) < q
        return np.where(follows, a_first, picks_a)

    first, second = verdict(True), verdict(False)
    return np.where(first & second, 1.0, np.where(~first & ~second, 0.0, 0.5))


def win_rate_cell(clusters: int, d: float, bias: float, reps: int, seed: int = 0) -> dict:
    gen = np.random.default_rng([seed, clusters, int(d * 100) + 500, int(bias * 100)])
    big = _expit(d + gen.normal(0, np.hypot(SD_CLUSTER, SD_TASK), 2_000_000))
    truth = float(np.mean(_pairs(gen, big, bias)))
    covered = 0
    tasks = np.repeat(np.arange(clusters * TASKS), TRIALS)
    labels = tasks // TASKS
    for _ in range(reps):
        q = _expit(
            d + gen.normal(0, SD_CLUSTER, (clusters, 1)) + gen.normal(0, SD_TASK, (clusters, TASKS))
        )
        scores = _pairs(gen, np.repeat(q.ravel(), TRIALS), bias)
        est = win_rate(scores, tasks, labels)
        covered += est.lo <= truth <= est.hi
    return {
        "clusters": clusters,
        "preference": d,
        "position bias": bias,
        "truth": truth,
        "reps": reps,
        "coverage": covered / reps,
    }


def corrected_grid(quick: bool = False) -> list[tuple[int, float, float, int]]:
    if quick:
        return [(12, 0.7, 0.95, 50), (12, 0.95, 0.7, 400), (24, 0.85, 0.85, 100)]
    accuracy = [(0.7, 0.7), (0.7, 0.95), (0.85, 0.85), (0.95, 0.7), (0.95, 0.95)]
    return [(g, se, sp, n) for g, (se, sp), n in product((12, 24), accuracy, (50, 100, 200, 400))]


def win_grid(quick: bool = False) -> list[tuple[int, float, float]]:
    if quick:
        return [(12, 0.5, 0.2)]
    return list(product((12, 24), (0.0, 0.5, 1.5), (0.0, 0.2, 0.4)))


def simulation_args(doc: str, reps: int) -> argparse.Namespace:
    """--reps (default ``reps``), --quick (a few cells) and --seed of a judge simulation."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--reps", type=int, default=reps)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def main() -> None:
    args = simulation_args(__doc__ or "", 1000)
    start = time.monotonic()
    rows = [corrected_cell(*cell, args.reps, seed=args.seed) for cell in corrected_grid(args.quick)]
    wins = [win_rate_cell(*cell, args.reps, seed=args.seed) for cell in win_grid(args.quick)]
    save(RESULT, "judge_coverage", args, start, {"true rate": 0.6}, rows=rows, win_rows=wins)


def save(path: Path, module: str, args: argparse.Namespace, start: float, settings: dict, **tables):
    """Write a judge simulation's results: its settings (the command that made them, the
    design, the seconds it took) and its tables of rows."""
    data = {
        "settings": {
            "command": f"python -m benchmarks.{module} --reps {args.reps}"
            + (" --quick" if args.quick else ""),
            "reps": args.reps,
            "seed": args.seed,
            **settings,
            "tasks per cluster": TASKS,
            "trials per task": TRIALS,
            "seconds": round(time.monotonic() - start, 1),
        },
        **tables,
    }
    path.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {path} ({data['settings']['seconds']} s)")


if __name__ == "__main__":
    main()
