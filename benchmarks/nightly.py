"""Nightly looks: false alarms of an unchanged agent, and how fast a real regression is caught.

A season is ``--looks`` nights (default 60) of one suite: ``--tasks`` tasks in
``--clusters`` clusters with planted per-task rates (cluster effect N(0.5, 1), task effect
N(0, 1) on the logit scale), fixed for the season. Every night the baseline and the candidate
each run one fresh trial per task.

- *unchanged*: the candidate is the baseline. A season is a false alarm when any look calls
  a regression.
- *regression*: from night ``--start`` (default 31) the candidate's per-task rates drop by a
  logit shift that lowers the suite's mean by ``--drop`` (default 10 points); it is caught
  when a look in nights start … start + 9 calls it (an alarm before the start counts as a
  false alarm, not a catch).

Readings, each by the functions the commands use (``harness.stats.sequential``):

- gate ``sequential: true``: the e-detector on each night's paired delta (candidate −
  baseline, ``night_look``), alarm at R_t ≥ 60/α; ``looks: L`` plans L looks (alarm at L/α);
- ``history --sequential``: the e-detector on the recursive residuals of the candidate arm's
  own nightly rate (``innovations``, SE by ``drift_se``);
- before (the procedure this replaced): each night a fresh comparison of that night's trials
  at α·6/(π²k²) (gate) or of consecutive nights (history), CR2 + t over clusters.

Run: python benchmarks/nightly.py [--seasons 2000 --looks 60] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

from harness.stats.cluster_design import ClusterDesign
from harness.stats.mean_intervals import t_quantile
from harness.stats.sequential import (
    alarm_threshold,
    detector,
    drift_se,
    innovations,
    night_look,
)

ALPHA = 0.05


def _expit(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def plant(rng: np.random.Generator, seasons: int, tasks: int, clusters: int) -> np.ndarray:
    """Per-task logits of each season's suite (seasons × tasks)."""
    codes = np.arange(tasks) % clusters
    eta = rng.normal(0.5, 1.0, (seasons, clusters))[:, codes]
    return eta + rng.normal(0.0, 1.0, (seasons, tasks))


def shift_for(eta: np.ndarray, drop: float) -> np.ndarray:
    """Per season, the logit shift λ with mean(expit(η + λ)) − mean(expit(η)) = −drop."""
    base = _expit(eta).mean(axis=1)
    lo, hi = np.full(eta.shape[0], -10.0), np.zeros(eta.shape[0])
    for _ in range(60):
        mid = (lo + hi) / 2
        too_low = _expit(eta + mid[:, None]).mean(axis=1) - base < -drop
        lo, hi = np.where(too_low, mid, lo), np.where(too_low, hi, mid)
    return (lo + hi) / 2


def simulate(
    rng: np.random.Generator,
    seasons: int,
    looks: int,
    tasks: int,
    clusters: int,
    start: int | None,
    drop: float,
) -> tuple[np.ndarray, np.ndarray]:
    """(baseline outcomes, candidate outcomes), each seasons × nights × tasks (0/1)."""
    eta = plant(rng, seasons, tasks, clusters)
    p = _expit(eta)
    q = np.broadcast_to(p[:, None, :], (seasons, looks, tasks)).copy()
    if start is not None:
        lam = shift_for(eta, drop)
        q[:, start - 1 :, :] = _expit(eta + lam[:, None])[:, None, :]
    base = (rng.random((seasons, looks, tasks)) < p[:, None, :]).astype(float)
    cand = (rng.random((seasons, looks, tasks)) < q).astype(float)
    return base, cand


def first_alarm(log_stat: np.ndarray, threshold: float) -> np.ndarray:
    """1-based night of the first alarm per season (0: none)."""
    hit = log_stat >= threshold
    return np.where(hit.any(axis=1), hit.argmax(axis=1) + 1, 0)


def readings(
    base: np.ndarray, cand: np.ndarray, clusters: int, looks: int
) -> dict[str, np.ndarray]:
    """First alarm night of every reading, per season."""
    seasons, nights, tasks = base.shape
    est, se = night_look((cand - base).reshape(-1, tasks))
    est, se = est.reshape(seasons, nights), se.reshape(seasons, nights)
    out = {
        "gate sequential": first_alarm(
            detector(est, se, 0.0, "below").log_r, alarm_threshold(ALPHA)
        ),
        f"gate looks: {looks}": first_alarm(
            detector(est, se, 0.0, "below").log_r, alarm_threshold(ALPHA, looks)
        ),
    }
    rate, _ = night_look(cand.reshape(-1, tasks))
    rate = rate.reshape(seasons, nights)
    sd = np.full((seasons, nights), np.nan)
    sd[:, 1:] = drift_se(cand[:, 1:].reshape(-1, tasks), cand[:, :-1].reshape(-1, tasks)).reshape(
        seasons, nights - 1
    )
    sd[:, 0] = sd[:, 1]
    resid, resid_se = innovations(rate, sd)
    out["history --sequential"] = first_alarm(
        detector(resid, resid_se, 0.0, "below").log_r, alarm_threshold(ALPHA)
    )
    out.update(_before(base, cand, clusters))
    return out


def _before(base: np.ndarray, cand: np.ndarray, clusters: int) -> dict[str, np.ndarray]:
    """The replaced procedure: a fresh CR2 + t look per night at α·6/(π²k²)."""
    seasons, nights, tasks = base.shape
    design = ClusterDesign.of(np.arange(tasks) % clusters)
    k = np.arange(1, nights + 1)
    alpha_k = ALPHA * 6.0 / (math.pi**2 * k * k)

    def calls(x: np.ndarray, alphas: np.ndarray) -> np.ndarray:
        mean, se, df = design.cr2(x.reshape(-1, tasks))
        q = t_quantile(df, 1 - 2 * np.tile(alphas, x.shape[0]))
        return (mean + q * se < 0).reshape(x.shape[0], x.shape[1])

    gate = calls(cand - base, alpha_k)
    hist = np.zeros_like(gate)
    hist[:, 1:] = calls(cand[:, 1:] - cand[:, :-1], alpha_k[1:])
    return {
        "before: gate sequential": np.where(gate.any(axis=1), gate.argmax(axis=1) + 1, 0),
        "before: history --sequential": np.where(hist.any(axis=1), hist.argmax(axis=1) + 1, 0),
    }


def run(seasons: int, looks: int, tasks: int, clusters: int, start: int, drop: float, seed: int):
    """Rows: per reading, false-alarm share (unchanged seasons) and catch share."""
    rng = np.random.default_rng(seed)
    null = readings(*simulate(rng, seasons, looks, tasks, clusters, None, drop), clusters, looks)
    alt = readings(*simulate(rng, seasons, looks, tasks, clusters, start, drop), clusters, looks)
    rows = []
    for name in null:
        a, b = null[name], alt[name]
        caught = (b >= start) & (b <= start + 9)
        delay = (b[caught] - start + 1).astype(float)
        rows.append(
            {
                "reading": name,
                "seasons": seasons,
                "false alarms": float(np.mean(a > 0)),
                "caught within 10 nights": float(np.mean(caught)),
                "alarm before the start": float(np.mean((b > 0) & (b < start))),
                "median nights to catch": float(np.median(delay)) if delay.size else None,
            }
        )
    return rows


def markdown(rows: list[dict], looks: int, tasks: int, clusters: int, drop: float) -> str:
    seasons = rows[0]["seasons"]
    se = math.sqrt(0.05 * 0.95 / seasons)
    out = [
        f"{seasons} seasons of {looks} nights per column, {tasks} tasks in {clusters} clusters, "
        f"one trial per task per arm per night; ± {se:.1%} (one binomial SE at 5%)",
        "",
        f"| reading | false alarms per season (unchanged agent) | {drop:.0%} drop from night 31 "
        "caught within 10 nights | median nights to catch |",
        "|---|---|---|---|",
    ]
    for r in rows:
        med = r["median nights to catch"]
        out.append(
            f"| {r['reading']} | {r['false alarms']:.1%} | {r['caught within 10 nights']:.1%} | "
            f"{'—' if med is None else f'{med:.0f}'} |"
        )
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seasons", type=int, default=2000)
    parser.add_argument("--looks", type=int, default=60)
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--clusters", type=int, default=25)
    parser.add_argument("--start", type=int, default=31)
    parser.add_argument("--drop", type=float, default=0.10)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", type=Path, help="write the rows to this JSON file")
    args = parser.parse_args()
    t0 = time.perf_counter()
    rows = run(
        args.seasons, args.looks, args.tasks, args.clusters, args.start, args.drop, args.seed
    )
    print(markdown(rows, args.looks, args.tasks, args.clusters, args.drop))
    print(f"({time.perf_counter() - t0:.0f} s)")
    if args.json:
        meta = {
            k: getattr(args, k)
            for k in ("seasons", "looks", "tasks", "clusters", "start", "drop", "seed")
        }
        meta["command"] = f"python -m benchmarks.nightly --seasons {args.seasons}"
        args.json.write_text(json.dumps({"settings": meta, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
