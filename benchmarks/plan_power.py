"""Plans that hold: at the effect ``harness plan --run`` prints, the gate's measured power.

For each cell: ``--pilots`` planted suites (the logit-normal population of
``benchmarks/coverage_grid.py``: cluster effect σ_c, task effect 0.8, the baseline's mean rate
``--base``; unequal cluster sizes 2, 4, 8, 18). On each suite a pilot run (both arms the
same agent, ``--trials`` trials per task) is planned by the function ``harness plan --run``
calls (``PilotModel`` + ``minimum_detectable_effect`` under the improvement rule, one-sided
95%). Then ``--runs`` fresh runs of the same suite are made with the candidate truly better by
exactly the printed effect — a logit shift plus per-cluster effect heterogeneity N(0, 0.5²),
which the plan does not model — and read by the gate's own decision (``GateRule.paired``).
The measured power is the share the gate passes; the table gives its mean over pilots (what
"80% power" promises) and the spread between pilots. "formula" is the MDE the plan printed
before, z_sum·sqrt(D/(C + z_sum²)) on cluster discordance, read by the same gate.

Run: python -m benchmarks.plan_power [--pilots 60 --runs 400] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

from benchmarks.coverage_grid import CLUSTER_SD, SD_HET, SD_TASK, mu_for, sizes_of
from harness.stats.cluster_design import ClusterDesign
from harness.stats.gate_rule import IMPROVEMENT, GateRule
from harness.stats.plan_sim import PilotModel, simulated_mde


def _expit(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def formula_mde(codes: np.ndarray, xa: np.ndarray, xb: np.ndarray) -> float:
    """The replaced plan: δ = z_sum·sqrt(D/(C + z_sum²)), D the cluster-level discordance."""
    z = 1.959963984540054 + 0.8416212335729143
    d = xb - xa
    g = int(codes.max()) + 1
    totals = np.bincount(codes, weights=d, minlength=g)
    m_bar = d.size / g
    disc = float(np.mean((totals / m_bar) ** 2))
    return z * math.sqrt(disc / (g + z * z))


def one_pilot(rng, clusters: int, base: float, spread: str, trials: int, runs: int, plan_runs: int):
    sizes = sizes_of(clusters, equal=False)
    codes = np.repeat(np.arange(clusters), sizes)
    sd_c = CLUSTER_SD[spread]
    eta = (
        mu_for(base, sd_c)
        + rng.normal(0, sd_c, clusters)[codes]
        + rng.normal(0, SD_TASK, codes.size)
    )
    p = _expit(eta)
    t = np.full(codes.size, trials)
    ca, cb = rng.binomial(trials, p), rng.binomial(trials, p)
    model = PilotModel.from_counts(codes, ca, t, cb, t)
    rule = GateRule("improvement")
    plan = simulated_mde(model, rule, 0.8, plan_runs, rng)
    old = formula_mde(codes, ca / trials, cb / trials)
    design = ClusterDesign.of(codes)
    out = {"mde": plan.effect, "formula mde": old}
    for name, effect in (("power", plan.effect), ("formula power", old)):
        if effect is None:
            out[name] = None
            continue
        het = rng.normal(0, SD_HET, (runs, clusters))[:, codes]

        # λ with the planted mean gain exactly the effect (heterogeneity averaged over runs)
        lo, hi = -1.0, 8.0
        for _ in range(30):
            mid = (lo + hi) / 2
            gain = float(np.mean(_expit(eta + mid + het[:50]))) - float(p.mean())
            lo, hi = (mid, hi) if gain < effect else (lo, mid)
        lam = (lo + hi) / 2
        q = _expit(eta + lam + het)
        xa = rng.binomial(trials, np.broadcast_to(p, q.shape)) / trials
        xb = rng.binomial(trials, q) / trials
        verdicts = rule.paired(design, xa, xb, (t, t))
        out[name] = float(np.mean(verdicts == IMPROVEMENT))
    return out


def run_cell(clusters, base, spread, trials, pilots, runs, plan_runs, seed):
    rng = np.random.default_rng([seed, clusters, int(base * 100), len(spread), trials])
    rows = [one_pilot(rng, clusters, base, spread, trials, runs, plan_runs) for _ in range(pilots)]
    pw = np.array([r["power"] for r in rows if r["power"] is not None])
    fp = np.array([r["formula power"] for r in rows if r["formula power"] is not None])
    mde = np.array([r["mde"] for r in rows if r["mde"] is not None])
    return {
        "clusters": clusters,
        "base": base,
        "spread": spread,
        "trials": trials,
        "pilots": pilots,
        "runs per pilot": runs,
        "plan runs": plan_runs,
        "unreachable": sum(r["mde"] is None for r in rows),
        "mean power": float(pw.mean()) if pw.size else None,
        "power se": float(pw.std(ddof=1) / math.sqrt(pw.size)) if pw.size > 1 else None,
        "power q25": float(np.quantile(pw, 0.25)) if pw.size else None,
        "power q75": float(np.quantile(pw, 0.75)) if pw.size else None,
        "median mde": float(np.median(mde)) if mde.size else None,
        "formula mean power": float(fp.mean()) if fp.size else None,
        "formula median mde": float(np.median([r["formula mde"] for r in rows])),
    }


CELLS = [
    (g, base, spread, 1) for g in (12, 24, 60) for base in (0.7,) for spread in ("mild", "strong")
]


def markdown(rows: list[dict]) -> str:
    out = [
        "| clusters | baseline rate | cluster spread | pilots × runs | plan's MDE (median) | "
        "gate's power at it: mean ± SE (IQR over pilots) | before: formula MDE → power |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        mean = "—" if r["mean power"] is None else f"{r['mean power']:.1%} ± {r['power se']:.1%}"
        iqr = "" if r["power q25"] is None else f" ({r['power q25']:.0%}–{r['power q75']:.0%})"
        mde = "—" if r["median mde"] is None else f"{r['median mde'] * 100:+.1f} pts"
        old = f"{r['formula median mde'] * 100:+.1f} pts → {r['formula mean power']:.0%}"
        out.append(
            f"| {r['clusters']} | {r['base']:.0%} | {r['spread']} | {r['pilots']} × "
            f"{r['runs per pilot']} | {mde} | {mean}{iqr} | {old} |"
        )
    return "\n".join(out)


def _settings(args) -> dict:
    meta = {k: v for k, v in vars(args).items() if k != "json"}
    meta["command"] = (
        f"python -m benchmarks.plan_power --pilots {args.pilots} --runs {args.runs} "
        f"--plan-runs {args.plan_runs}"
    )
    return meta


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pilots", type=int, default=60)
    parser.add_argument("--runs", type=int, default=400)
    parser.add_argument("--plan-runs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    t0 = time.perf_counter()
    rows = []
    for g, base, spread, trials in CELLS:
        rows.append(
            run_cell(g, base, spread, trials, args.pilots, args.runs, args.plan_runs, args.seed)
        )
        print(json.dumps(rows[-1]), flush=True)
    print(markdown(rows))
    print(f"({time.perf_counter() - t0:.0f} s)")
    if args.json:
        args.json.write_text(
            json.dumps({"settings": _settings(args), "rows": rows}, indent=1) + "\n"
        )


if __name__ == "__main__":
    main()
