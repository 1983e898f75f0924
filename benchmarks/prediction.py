"""pass^k predictions beyond the trials run: how often withheld, how often the plain
beta-binomial is rejected, and coverage where a prediction is shown.

Planted task-rate populations (``TRUTHS``): the agent-evaluation guide's Beta(1.224, 0.776);
a 30% share of tasks that always pass beside Beta(2, 3) (the common misfit of a plain Beta);
20% always and 20% never passing beside Beta(2, 2); a logit-normal (mean 0.8, SD 1.6 on the
logit scale). Each run draws ``tasks`` tasks with ``trials`` trials each and reads them with
the report's predictor (``harness.stats.passk_predict.predict_pass_k``, 200 resamples) at
k = 16; "before" is the plain beta-binomial fit the report used until now
(``predict_pass_hat_k``, moments, same resamples). Every run also computes the model-free bound
(``harness.stats.passk_bounds``) that the report's interval is widened to.

Run: python -m benchmarks.prediction [--reps 100] [--tasks 50 200] [--jobs 2] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

K = 16
TRUTHS = {
    "beta (guide)": ("beta", 1.224, 0.776, 0.0, 0.0),
    "always-pass mix": ("beta", 2.0, 3.0, 0.3, 0.0),
    "always- and never-pass mix": ("beta", 2.0, 2.0, 0.2, 0.2),
    "logit-normal": ("logitnormal", 0.8, 1.6, 0.0, 0.0),
}


def truth(name: str) -> float:
    """E[p^K] of the planted population (exact for Beta parts, quadrature otherwise)."""
    from harness.stats.betabinom import beta_pass_hat_k

    kind, x, y, always, never = TRUTHS[name]
    if kind == "beta":
        return always + (1 - always - never) * float(beta_pass_hat_k(x, y, K))
    nodes, weights = np.polynomial.hermite.hermgauss(120)
    p = 1 / (1 + np.exp(-(x + math.sqrt(2) * y * nodes)))
    return float(np.sum(weights * p**K) / math.sqrt(math.pi))


def draw(rng: np.random.Generator, name: str, tasks: int) -> np.ndarray:
    kind, x, y, always, never = TRUTHS[name]
    if kind == "beta":
        p = rng.beta(x, y, tasks)
    else:
        p = 1 / (1 + np.exp(-(x + y * rng.standard_normal(tasks))))
    u = rng.random(tasks)
    return np.where(u < always, 1.0, np.where(u < always + never, 0.0, p))


def run_cell(name: str, tasks: int, trials: int, reps: int, seed: int, boot: int = 200) -> dict:
    from harness.stats import predict_pass_hat_k
    from harness.stats.passk_predict import predict_pass_k

    rng = np.random.default_rng([seed, tasks, trials, list(TRUTHS).index(name)])
    t = truth(name)
    shown = covered = withheld = uncheckable = rejected = before_cov = 0
    below = above = robust = bound_cov = 0
    widths: list[float] = []
    before_est: list[float] = []
    for _ in range(reps):
        c = rng.binomial(trials, draw(rng, name, tasks))
        n = np.full(tasks, trials)
        e = predict_pass_k(c, n, [K], n_boot=boot, rng=rng)
        # the plain beta-binomial rejected: an always- or never-pass share is needed, or it
        # misfits
        rejected += bool(e.model and e.model != "beta-binomial") or bool(
            e.withheld and "the beta-binomial does not fit" in e.withheld
        )
        assert e.bound_lo is not None and e.bound_hi is not None
        b_lo, b_hi = float(e.bound_lo[0]), float(e.bound_hi[0])
        bound_cov += bool(b_lo <= t <= b_hi)
        widths.append(b_hi - b_lo)
        if e.estimate is None or e.lo is None or e.hi is None:
            withheld += 1
            uncheckable += bool(e.withheld and "cannot be checked" in e.withheld)
        else:
            shown += 1
            covered += bool(e.lo[0] <= t <= e.hi[0])
            below += bool(e.hi[0] < t)
            above += bool(e.lo[0] > t)
            robust += bool(min(e.lo[0], b_lo) <= t <= max(e.hi[0], b_hi))
        try:
            old = predict_pass_hat_k(c, n, [K], n_boot=boot, rng=rng, method="moments")
        except ValueError:
            continue
        before_cov += bool(old.lo[0] <= t <= old.hi[0])
        before_est.append(float(old.estimate[0]))
    return {
        "truth name": name,
        "truth": t,
        "tasks": tasks,
        "trials": trials,
        "reps": reps,
        "withheld": withheld / reps,
        "withheld: no df to check": uncheckable / reps,
        "beta rejected": rejected / reps,
        "shown": shown,
        "covered when shown": covered / shown if shown else None,
        "interval below truth": below / shown if shown else None,
        "interval above truth": above / shown if shown else None,
        "widened covered when shown": robust / shown if shown else None,
        "bound covered": bound_cov / reps,
        "bound mean width": float(np.mean(widths)),
        "before: coverage": before_cov / max(1, len(before_est)),
        "before: mean prediction": float(np.mean(before_est)) if before_est else None,
    }


def markdown(data: dict) -> str:
    s = data["settings"]
    out = [
        f"`{s['command']}`: pass^{K} predicted from {s['trials']} trials per task, "
        f"{s['reps']} runs per row (coverage ± about {math.sqrt(0.95 * 0.05 / s['reps']):.1%}"
        " where every run is shown); *beta rejected*: the plain beta-binomial was replaced by "
        "a model with an always- or never-pass share, or withheld by the G² check; *model interval*: the chosen "
        "model's bootstrap interval; *shown interval*: the report's, the model interval "
        "widened to the model-free bound; *model-free bound*: computed in every run, shown or "
        "withheld",
        "",
        f"| planted task rates | tasks | true pass^{K} | beta rejected | withheld (no df to check) | model"
        " interval:"
        " coverage when shown (below / above truth) | shown interval: coverage | model-free "
        "bound: coverage, mean width | before (plain beta-binomial): mean prediction, coverage |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in data["rows"]:
        cov = r["covered when shown"]
        cell = (
            "—"
            if cov is None
            else f"{cov:.1%} ({r['interval below truth']:.1%} / {r['interval above truth']:.1%}"
            f"; {r['shown']} shown)"
        )
        before = r["before: mean prediction"]
        wide = r["widened covered when shown"]
        out.append(
            f"| {r['truth name']} | {r['tasks']} | {r['truth']:.3f} | {r['beta rejected']:.0%} | "
            f"{r['withheld']:.0%} ({r['withheld: no df to check']:.0%}) | {cell} | {'—' if wide is None else f'{wide:.1%}'} | "
            f"{r['bound covered']:.1%}, {r['bound mean width']:.3f} | "
            f"{'—' if before is None else f'{before:.3f}'}, {r['before: coverage']:.1%} |"
        )
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--tasks", type=int, nargs="+", default=[50, 200])
    parser.add_argument("--json", type=Path)
    parser.add_argument("--jobs", type=int, default=1, help="processes (cells run in parallel)")
    args = parser.parse_args()
    t0 = time.perf_counter()
    cells = [
        (name, tasks, args.trials, args.reps, args.seed) for tasks in args.tasks for name in TRUTHS
    ]
    if args.jobs > 1:
        from multiprocessing import Pool

        with Pool(args.jobs) as pool:
            rows = pool.starmap(run_cell, cells)
    else:
        rows = [run_cell(*cell) for cell in cells]
    for row in rows:
        print(json.dumps(row), flush=True)
    command = f"python -m benchmarks.prediction --reps {args.reps} --trials {args.trials} "
    command += "--tasks " + " ".join(map(str, args.tasks))
    settings = {"reps": args.reps, "seed": args.seed, "k": K, "trials": args.trials}
    data = {"settings": {**settings, "command": command}, "rows": rows}
    print(markdown(data))
    print(f"({time.perf_counter() - t0:.0f} s)")
    if args.json:
        args.json.write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    main()
