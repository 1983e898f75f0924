"""The threshold gate on judged runs, raw against corrected: false ships and power, by simulation.

A one-arm run of G clusters of 4 tasks, 3 trials each, from the planted population of
``benchmarks.judge_coverage`` (a trial passes for people with probability
expit(μ + u_c + v_i), μ solved so the population pass rate is π). A judge with planted
sensitivity Se and specificity Sp grades every trial; the store holds its verdicts. People
label ``n`` of the run's own trials, drawn at random (what ``harness label`` gives a gate:
the calibration set and the judged rate share trials, which the corrected interval's Monte
Carlo treats as independent). Each replication applies the real gate,
``harness.release.gate.evaluate_gate``, with ``rule: threshold``, ``bar`` 0.7 (and 0.9,
near the top of the scale), one-sided at 95%: once as graded (``quantity: raw``) and once on
the corrected rates with their decision bounds (``harness.analysis.judging.corrected`` with
``cautious=True``, what ``quantity: corrected`` reads). A ship is the verdict "meets the
bar". At π = bar a ship is a false one (the rule allows 5%); above it (π = bar + 0.15, or
0.97 for the bar 0.9) the share of ships is the power.

Run: python -m benchmarks.judge_gate [--reps 400] [--quick]
Writes benchmarks/results/judge_gate.json.
"""

from __future__ import annotations

import json
import time
from itertools import product
from pathlib import Path

import numpy as np

from benchmarks.judge_coverage import (
    SD_CLUSTER,
    SD_TASK,
    TASKS,
    TRIALS,
    _expit,
    _mu_for,
    save,
    simulation_args,
)

BAR = 0.7
TOP_BAR = 0.9
RESULT = Path(__file__).resolve().parent / "results" / "judge_gate.json"


def _run(gen: np.random.Generator, clusters: int, mu: float, se: float, sp: float):
    """People's truth and the judge's verdicts, shaped (clusters, tasks, trials)."""
    p = _expit(
        mu + gen.normal(0, SD_CLUSTER, (clusters, 1)) + gen.normal(0, SD_TASK, (clusters, TASKS))
    )
    truth = gen.random((clusters, TASKS, TRIALS)) < p[..., None]
    judged = np.where(truth, gen.random(truth.shape) < se, gen.random(truth.shape) >= sp)
    return truth.ravel(), judged.ravel()


def _tables(clusters: int, truth: np.ndarray, judged: np.ndarray, labelled: np.ndarray):
    """The run as the gate reads it (a ``Trials`` table) and as the corrected rates read it
    (a ``JudgedRun`` with the labelled trials' truth as one person's labels)."""
    from harness.analysis.judging import JudgedRun
    from harness.analysis.table import Trials

    n = truth.size
    task = np.repeat(np.arange(clusters * TASKS), TRIALS)
    tasks = np.array([f"t{i:04d}" for i in task], dtype=object)
    cluster = np.array([f"c{i // TASKS:03d}" for i in task], dtype=object)
    trials = Trials.from_columns(
        {
            "arm": np.full(n, "cand", dtype=object),
            "task_id": tasks,
            "trial_index": np.tile(np.arange(TRIALS), clusters * TASKS),
            "seed": np.arange(n),
            "cluster": cluster,
            "task_class": np.full(n, "default", dtype=object),
            "status": np.where(judged, "passed", "failed").astype(object),
        }
    )
    run = JudgedRun(
        trial_id=list(range(n)),
        arm=["cand"] * n,
        task=tasks.tolist(),
        cluster=cluster.tolist(),
        passed=judged.tolist(),
        judged=[True] * n,
        setups=["s"] * n,
        labels={int(i): {"ann": bool(truth[i])} for i in labelled},
    )
    return trials, run


def gate_cell(
    clusters: int,
    se: float,
    sp: float,
    n_cal: int,
    pi: float,
    bar: float,
    reps: int,
    seed: int = 0,
) -> dict:
    """Ship rates of the raw and the corrected gate in one cell."""
    from harness.analysis.judging import corrected
    from harness.config.models import GatePolicy
    from harness.release.gate import evaluate_gate, interval_level

    gen = np.random.default_rng(
        [seed, clusters, int(se * 100), int(sp * 100), n_cal, int(pi * 100)]
    )
    mu = _mu_for(pi)
    policy = GatePolicy(rule="threshold", bar=bar)
    raw_ships = fixed_ships = refused = 0
    for _ in range(reps):
        truth, judged = _run(gen, clusters, mu, se, sp)
        labelled = gen.choice(truth.size, size=min(n_cal, truth.size), replace=False)
        trials, run = _tables(clusters, truth, judged, labelled)
        common = {"arms": ["cand"], "trials_per_task": TRIALS}
        raw_ships += evaluate_gate(trials, policy, **common)["verdict"] == "improvement"
        reading = corrected(run, None, interval_level(policy), cautious=True)
        if "note" in reading:  # no human fail among the labels, or a judge near chance
            refused += 1
            continue
        g = evaluate_gate(trials, policy, corrected=reading, **common)
        fixed_ships += g["verdict"] == "improvement"
    return {
        "clusters": clusters,
        "bar": bar,
        "sensitivity": se,
        "specificity": sp,
        "calibration": n_cal,
        "true rate": pi,
        "reps": reps,
        "raw ships": raw_ships / reps,
        "corrected ships": fixed_ships / (reps - refused) if reps > refused else None,
        "refused": refused,
    }


def grid(quick: bool = False) -> list[tuple[int, float, float, int, float, float]]:
    """(clusters, Se, Sp, labels, true rate, bar): the bar at 0.7, and near the top of the
    scale (bar 0.9, true rate on it and 7 points above), where a rate's bounds are skewed."""
    if quick:
        return [(12, 0.95, 0.7, 140, BAR, BAR), (12, 0.7, 0.95, 140, BAR + 0.15, BAR)]
    accuracy = [(0.95, 0.7), (0.85, 0.85), (0.7, 0.95)]
    cells = [
        (g, se, sp, n, pi, BAR)
        for g, (se, sp), n, pi in product((12, 30), accuracy, (50, 140), (BAR, BAR + 0.15))
    ]
    top = [(g, 0.95, 0.85, 140, pi, TOP_BAR) for g in (12, 30) for pi in (TOP_BAR, 0.97)]
    return cells + top


def main() -> None:
    args = simulation_args(__doc__ or "", 400)
    start = time.monotonic()
    rows = []
    for cell in grid(args.quick):
        rows.append(gate_cell(*cell, args.reps, seed=args.seed))
        print(json.dumps(rows[-1]), flush=True)
    settings = {"bar": f"{BAR}, and {TOP_BAR} near the top", "rule": "threshold, one-sided at 95%"}
    save(RESULT, "judge_gate", args, start, settings, rows=rows)


if __name__ == "__main__":
    main()
