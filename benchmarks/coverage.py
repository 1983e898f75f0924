"""Coverage of the harness's 95% intervals against planted truths with cluster correlation.

Planted population (logit scale): a task's success probability is expit(μ + u_c + v_i + s),
cluster effect u_c ~ N(0, 0.8²), task effect v_i ~ N(0, 0.8²); the candidate adds a planted
lift δ plus a cluster-level effect heterogeneity s_c ~ N(0, 0.5²); a "lookup" stratum adds +1.
The suite samples strata 50/50; the population is 20% join, 80% lookup. Cluster sizes are equal (8 tasks) or unequal (2, 4, 8, 18, repeating; mean 8). Arms draw their
trials independently given the task (as the simulated agent now does). Truths are exact
expectations over that population (Gauss-Hermite quadrature), so an interval "covers" when it
contains the population value, not the sample's.

Each replication builds one planted run and reads it through the code paths users see:
``paired_comparison`` (compare; and the gate's one-sided bound at its 90% two-sided level),
``class_screens`` (3 classes), the report's success, stratified and pass^2 sections, and an
adaptive-repeats run (1 trial, then up to 4 on discordant tasks) read by the phase-one
estimator; the all-trials delta's bias is measured beside it.

Run: python benchmarks/coverage.py [--reps 2000] [--clusters 6 12 24 60] [--sizes equal unequal]
[--paired-only]  (the last two run a subset of the rows, or only the paired-delta columns)

``--grid`` instead runs the cells of ``benchmarks/coverage_grid.py`` (the gate's one-sided
errors at bars 0.5–0.95, 12–60 clusters, equal and unequal sizes, mild and strong cluster
spread, 1 or 3 trials; two-sided coverage of success, paired delta and pass^k) and writes
them with ``--json`` (``benchmarks/results/coverage_grid.json``, from which
``python benchmarks/tables.py`` writes the docs' tables):

    nice -n 10 python -m benchmarks.coverage --grid --reps 4000 --json benchmarks/results/coverage_grid.json
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness.analysis.table import Trials

MU, SD_CLUSTER, SD_TASK, SD_HET, LIFT, STRATUM_SHIFT = 0.4, 0.8, 0.8, 0.5, 0.5, 1.0
SHARES = {"join": 0.2, "lookup": 0.8}
"""The population's stratum shares the stratified estimate reweights to."""
SAMPLE_LOOKUP = 0.5
"""The suite's own share of lookup tasks (deliberately unlike the population's)."""
UNEQUAL = (2, 4, 8, 18)
EQUAL_SIZE = 8
TRIALS = 3
QUANTITIES = (
    "success rate",
    "paired delta (compare)",
    "paired delta (gate, one-sided)",
    "class-screen delta",
    "stratified estimate",
    "pass^2",
    "adaptive-repeat delta",
)


def _expit(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _normal_mean(f, mean: float, sd: float, nodes: int = 80) -> float:
    """E[f(X)] for X ~ N(mean, sd²) by Gauss-Hermite quadrature."""
    x, w = np.polynomial.hermite.hermgauss(nodes)
    return float(np.sum(w * f(mean + math.sqrt(2.0) * sd * x)) / math.sqrt(math.pi))


@dataclass(frozen=True)
class Truths:
    rate: float
    delta: float
    stratified: float
    pass2: float


def truths() -> Truths:
    """Population values of every estimand (exact up to quadrature error)."""
    sd_a = math.hypot(SD_CLUSTER, SD_TASK)
    sd_b = math.hypot(sd_a, SD_HET)

    def mix(f, shift: float, sd: float, lookup_share: float) -> float:
        join = _normal_mean(f, MU + shift, sd)
        lookup = _normal_mean(f, MU + shift + STRATUM_SHIFT, sd)
        return (1 - lookup_share) * join + lookup_share * lookup

    a = mix(_expit, 0.0, sd_a, SAMPLE_LOOKUP)
    b = mix(_expit, LIFT, sd_b, SAMPLE_LOOKUP)
    return Truths(
        rate=a,
        delta=b - a,
        stratified=mix(_expit, 0.0, sd_a, SHARES["lookup"]),
        pass2=mix(lambda x: _expit(x) ** 2, 0.0, sd_a, SAMPLE_LOOKUP),
    )


@dataclass
class Planted:
    """One planted run: per task its cluster, class, stratum and both arms' probabilities."""

    clusters: np.ndarray
    classes: np.ndarray
    strata: np.ndarray
    p_a: np.ndarray
    p_b: np.ndarray


def plant(rng: np.random.Generator, n_clusters: int, equal: bool) -> Planted:
    sizes = (
        np.full(n_clusters, EQUAL_SIZE)
        if equal
        else np.array([UNEQUAL[i % len(UNEQUAL)] for i in range(n_clusters)])
    )
    cl = np.repeat(np.arange(n_clusters), sizes)
    n = cl.size
    u = rng.normal(0, SD_CLUSTER, n_clusters)[cl]
    s = rng.normal(0, SD_HET, n_clusters)[cl]
    v = rng.normal(0, SD_TASK, n)
    lookup = rng.random(n) < SAMPLE_LOOKUP
    eta = MU + u + v + STRATUM_SHIFT * lookup
    return Planted(
        clusters=np.array([f"c{c}" for c in cl], dtype=object),
        classes=np.array([f"k{i}" for i in rng.integers(0, 3, n)], dtype=object),
        strata=np.where(lookup, "lookup", "join").astype(object),
        p_a=_expit(eta),
        p_b=_expit(eta + LIFT + s),
    )


def _rows(pl: Planted, p: np.ndarray, trials: np.ndarray, rng, start: np.ndarray) -> dict:
    """Column rows of one arm: trial indices start..start+trials−1 per task."""
    task = np.repeat(np.arange(p.size), trials)
    offset = np.arange(task.size) - np.repeat(np.cumsum(trials) - trials, trials)
    passed = rng.random(task.size) < p[task]
    ids = np.array([f"t{i:04d}" for i in range(p.size)], dtype=object)
    return {
        "task_id": ids[task],
        "cluster": pl.clusters[task],
        "task_class": pl.classes[task],
        "weight": np.ones(task.size),
        "status": np.where(passed, "passed", "failed").astype(object),
        "trial_index": start[task] + offset,
        "seed": task * 1000 + start[task] + offset,
        "variant": np.full(task.size, "", dtype=object),
    }


def _trials(columns: dict) -> Trials:
    """An arm's column rows as the trials table the release code reads."""
    return Trials.from_columns(columns)


def _join(a: dict, b: dict) -> dict:
    return {k: np.concatenate([a[k], b[k]]) for k in a}


def _covers(lo: float, hi: float, truth: float) -> bool:
    return lo <= truth <= hi


def _adaptive(pl: Planted, a1: dict, b1: dict, rng, t: Truths, out: dict) -> None:
    """Adaptive repeats: phase one, then 3 more trials on discordant tasks in both arms."""
    from harness.release.compare import paired_comparison

    n = pl.p_a.size
    one = np.ones(n, dtype=np.int64)
    pa1 = a1["status"] == "passed"
    pb1 = b1["status"] == "passed"
    extra = np.where(pa1 != pb1, 3, 0)
    a2 = _rows(pl, pl.p_a, extra, rng, one)
    b2 = _rows(pl, pl.p_b, extra, rng, one)
    ad = paired_comparison(_trials(_join(a1, a2)), _trials(_join(b1, b2)), phase_one_trials=1)
    out["adaptive-repeat delta"] = _covers(ad["lo"], ad["hi"], t.delta)
    out["_adaptive_headline"] = ad["estimate"] - t.delta
    out["_adaptive_all_trials"] = ad["all_trials"]["estimate"] - t.delta
    out["_adaptive_all_covers"] = _covers(ad["all_trials"]["lo"], ad["all_trials"]["hi"], t.delta)


def replicate(
    rng: np.random.Generator, n_clusters: int, equal: bool, t: Truths, paired_only: bool = False
) -> dict:
    """One planted run read through every path (or only the paired deltas); returns
    {quantity: covered} and biases."""
    from harness.release.compare import paired_comparison
    from harness.release.slices import class_screens
    from harness.report.sections import pass_k_section, stratified_section
    from harness.stats.task_units import choose_unit, mean_interval

    pl = plant(rng, n_clusters, equal)
    n = pl.p_a.size
    zero = np.zeros(n, dtype=np.int64)
    one = np.ones(n, dtype=np.int64)
    a1, b1 = _rows(pl, pl.p_a, one, rng, zero), _rows(pl, pl.p_b, one, rng, zero)
    out: dict[str, float] = {}
    ta, tb = _trials(a1), _trials(b1)
    c = paired_comparison(ta, tb)
    out["paired delta (compare)"] = _covers(c["lo"], c["hi"], t.delta)
    g = paired_comparison(ta, tb, confidence=0.90)
    out["paired delta (gate, one-sided)"] = g["lo"] <= t.delta
    if paired_only:
        _adaptive(pl, a1, b1, rng, t, out)
        return out
    sc = class_screens(ta, tb)
    shown = [s for s in sc["classes"] if s["lo"] is not None]
    covered = [_covers(s["lo"], s["hi"], t.delta) for s in shown]
    out["class-screen delta"] = float(np.mean(covered)) if covered else math.nan
    out["_class_refused"] = len(sc["classes"]) - len(shown)
    out["_class_total"] = len(sc["classes"])

    # the report's sections on the baseline arm with TRIALS trials per task
    succ = rng.binomial(TRIALS, pl.p_a)
    rates = succ / TRIALS
    unit = choose_unit(pl.clusters.astype(str), "cluster")
    s = mean_interval(rates, unit, 0.95)
    out["success rate"] = _covers(s["lo"], s["hi"], t.rate)
    share = np.array([SHARES[x] for x in pl.strata])
    n_h = {h: max(1, int(np.sum(pl.strata == h))) for h in SHARES}
    weights = share / np.array([n_h[x] for x in pl.strata])
    st = stratified_section(rates, pl.strata, weights, unit, 0.95)
    out["stratified estimate"] = _covers(st["lo"], st["hi"], t.stratified)
    hat, _ = pass_k_section(np.full(n, TRIALS), succ, unit, [2], confidence=0.95)
    out["pass^2"] = _covers(hat[0]["lo"], hat[0]["hi"], t.pass2)

    _adaptive(pl, a1, b1, rng, t, out)
    return out


def run(
    reps: int,
    cluster_counts: list[int],
    seed: int = 2026,
    sizes: tuple[str, ...] = ("equal", "unequal"),
    paired_only: bool = False,
) -> list[dict]:
    """Coverage per (clusters, sizes, quantity) with its binomial SE, plus adaptive bias."""
    t = truths()
    table: list[dict] = []
    for equal in (True, False):
        if ("equal" if equal else "unequal") not in sizes:
            continue
        for k in cluster_counts:
            rng = np.random.default_rng([seed, k, int(equal)])
            results = [replicate(rng, k, equal, t, paired_only) for _ in range(reps)]
            row = {"clusters": k, "sizes": "equal" if equal else "unequal", "reps": reps}
            for q in QUANTITIES:
                vals = np.array([r.get(q, math.nan) for r in results], dtype=float)
                vals = vals[np.isfinite(vals)]
                row[q] = float(vals.mean()) if vals.size else math.nan
            total = sum(r.get("_class_total", 0) for r in results)
            refused = sum(r.get("_class_refused", 0) for r in results)
            row["class screens refused"] = refused / total if total else math.nan
            row["adaptive bias: phase one"] = float(
                np.mean([r["_adaptive_headline"] for r in results])
            )
            row["adaptive bias: all trials"] = float(
                np.mean([r["_adaptive_all_trials"] for r in results])
            )
            row["adaptive all-trials coverage"] = float(
                np.mean([r["_adaptive_all_covers"] for r in results])
            )
            table.append(row)
    return table


def coverage_se(reps: int, level: float = 0.95) -> float:
    """Binomial standard error of a coverage estimate from ``reps`` replications."""
    return math.sqrt(level * (1 - level) / reps)


def _cell(row: dict, q: str) -> str:
    if math.isfinite(row[q]):
        return f"{row[q]:.1%}"
    if q == "class-screen delta" and row["class screens refused"] == 1.0:
        return "refused"
    return "—"


def markdown(table: list[dict]) -> str:
    cols = ["clusters", "sizes", *QUANTITIES]
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in table:
        cells = [str(row["clusters"]), row["sizes"]]
        cells += [_cell(row, q) for q in QUANTITIES]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--clusters", type=int, nargs="+", default=[6, 12, 24, 60])
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--sizes", nargs="+", choices=["equal", "unequal"], default=None)
    parser.add_argument(
        "--paired-only",
        action="store_true",
        help="only the paired-delta columns (compare, gate, adaptive repeats)",
    )
    parser.add_argument("--grid", action="store_true", help="the cells of coverage_grid.py")
    parser.add_argument("--json", type=Path, help="with --grid: write the rows to this file")
    args = parser.parse_args()
    t0 = time.perf_counter()
    if args.grid:
        _grid(args.reps, args.seed, args.json)
        print(f"({time.perf_counter() - t0:.0f} s)")
        return
    sizes = tuple(args.sizes or ("equal", "unequal"))
    table = run(args.reps, args.clusters, args.seed, sizes, args.paired_only)
    t = truths()
    print(
        f"truths: rate {t.rate:.4f}, delta {t.delta:+.4f}, stratified {t.stratified:.4f}, "
        f"pass^2 {t.pass2:.4f}; {args.reps} reps per row (coverage SE ±"
        f"{coverage_se(args.reps):.1%}); {time.perf_counter() - t0:.0f} s"
    )
    print(markdown(table))
    for row in table:
        if math.isfinite(row["class screens refused"]) and row["class screens refused"] > 0:
            print(
                f"  {row['clusters']} clusters, {row['sizes']}: class screens with no interval "
                f"(fewer than the minimum clusters in the class): {row['class screens refused']:.1%}"
            )
    print("\nadaptive repeats (1 trial, then 4 on discordant tasks): mean error of the delta")
    for row in table:
        print(
            f"  {row['clusters']:>3} clusters, {row['sizes']:>7}: phase-one headline "
            f"{row['adaptive bias: phase one']:+.4f}, all-trials {row['adaptive bias: all trials']:+.4f}"
            f" (all-trials coverage {row['adaptive all-trials coverage']:.1%})"
        )


def _grid(reps: int, seed: int, out: Path | None) -> None:
    """Every cell of ``coverage_grid.grid()``; one JSON line per cell as it finishes."""
    import json

    from benchmarks.coverage_grid import grid, run_cell

    rows = []
    for cell, k in grid():
        rows.append(run_cell(cell, k, reps, seed))
        print(json.dumps(rows[-1]), flush=True)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        meta = {"reps": reps, "seed": seed, "command": "python -m benchmarks.coverage --grid"}
        out.write_text(json.dumps({"settings": meta, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
