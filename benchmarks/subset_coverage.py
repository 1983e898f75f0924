"""Coverage of subset and anchor intervals for the full suite's score, on a planted 2PL
benchmark (issue 27, point 4a), and the cost/precision trade-off.

World: N = 500 tasks, a ~ logN(0, 0.3²), b ~ N(0, 1), five classes by difficulty quintile;
40 past systems θ ~ N(0, 1) ran the full suite once (the fit's history). A new system
θ ~ N(0, 1) runs n tasks, one trial each; the truth is its full-suite expected score, the
mean of P_i(θ) over all 500 tasks, for the anchors; for the random and stratified subsets,
whose one-trial design interval is for the score the full run would have shown (the metrics
guide's finite-population estimand: at one trial per task the trials' noise cannot be told
from the tasks' spread), that full-run score. Per cell: the share of intervals (95%) that cover the
truth, the mean width, and the mean absolute error. Methods: random (design-based, FPC),
stratified by class (weighted back), anchors (2PL fit of the history, the n most informative
tasks at the newest abilities, model-based; ``anchors``: the history's 40 systems split
in two by a seed, one half's fit choosing the anchors and the other's scoring them, as
``harness anchors fit`` does; ``anchors_same``: one fit of all 40 doing both, as it did
before, whose chosen tasks' discrimination is over-stated and whose interval undercovers).
Conditions where the anchors' assumptions fail:
``drift`` (after the fit, 100 tasks' difficulty moved by +1: tasks that changed), ``new kind``
(the new system's ability differs by class, θ_c = θ + N(0, 0.8²): a system unlike the ones
fitted). Random and stratified subsets assume nothing of the model and stay covered.

Run: nice -n 10 python -m benchmarks.subset_coverage [--worlds 10 --systems 100]
(writes benchmarks/results/subset_coverage.json; ``--check`` re-renders the docs table from
it; tests/benchmarks/test_subset_sim.py recomputes a seeded sample).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np

from harness.stats import anchor_split, irt
from harness.stats import subset as sub

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "subset_coverage.json"
DOC = ROOT / "docs" / "statistics.md"
N_TASKS = 500
HISTORY = 40
NS = (25, 50, 100, 200)
CONDITIONS = ("2PL holds", "drift", "new kind")


def world(rng: np.random.Generator):  # type: ignore[no-untyped-def]
    a = np.exp(rng.normal(0, 0.3, N_TASKS))
    b = rng.normal(0, 1, N_TASKS)
    classes = np.argsort(np.argsort(b)) * 5 // N_TASKS
    past = rng.normal(0, 1, HISTORY)
    s = rng.binomial(1, irt.p2pl(past[:, None], a, b))
    split = anchor_split.split_fit(s, np.ones_like(s), [str(i) for i in range(HISTORY)], 0)
    return a, b, classes, irt.fit_2pl(s, np.ones_like(s)), split


def simulate(worlds: int, systems: int, seed: int, ns: tuple[int, ...] = NS) -> list[dict]:
    """Rows: one per (condition, method, n), with coverage, mean width and MAE."""
    rng = np.random.default_rng(seed)
    acc: dict[tuple[str, str, int], list[tuple[bool, float, float]]] = {}
    for _ in range(worlds):
        a, b, classes, fit, split = world(rng)
        same = {n: irt.most_informative(fit.a, fit.b, fit.theta[:5], n) for n in ns}
        ch = split.choose
        chosen = {n: irt.most_informative(ch.a, ch.b, split.recent_theta, n) for n in ns}
        population = {str(c): int((classes == c).sum()) for c in range(5)}
        for _ in range(systems):
            theta = rng.normal(0, 1)
            for cond in CONDITIONS:
                b_now, th = b, np.full(N_TASKS, theta)
                if cond == "drift":
                    moved = rng.choice(N_TASKS, 100, replace=False)
                    b_now = b.copy()
                    b_now[moved] += 1.0
                elif cond == "new kind":
                    th = theta + rng.normal(0, 0.8, 5)[classes]
                p = irt.p2pl(th, a, b_now)
                truth = float(p.mean())
                y = rng.binomial(1, p).astype(float)
                full = float(y.mean())  # the score the full run would have shown
                for n in ns:
                    drawn = rng.choice(N_TASKS, n, replace=False)
                    r = sub.subset_estimate(y[drawn], N_TASKS)
                    _add(acc, cond, "random", n, r.lo, r.hi, r.estimate, full)
                    strat = _stratified(rng, classes, n)
                    e = sub.stratified_subset_estimate(
                        y[strat], classes[strat].astype(str), population
                    )
                    _add(acc, cond, "stratified", n, e.lo, e.hi, e.estimate, full)
                    for method, k, f in (
                        ("anchors_same", same[n], fit),
                        ("anchors", chosen[n], split.score),
                    ):
                        ab = irt.ability(y[k], np.ones(n), f.a[k], f.b[k])
                        ps = irt.predicted_score(ab, f.a, f.b)
                        _add(acc, cond, method, n, ps.lo, ps.hi, ps.estimate, truth)
    rows = []
    for (cond, method, n), vals in sorted(acc.items()):
        arr = np.array(vals)
        rows.append(
            {
                "condition": cond,
                "method": method,
                "n": n,
                "reps": len(vals),
                "coverage": float(arr[:, 0].mean()),
                "width": float(arr[:, 1].mean()),
                "mae": float(arr[:, 2].mean()),
            }
        )
    return rows


def _stratified(rng: np.random.Generator, classes: np.ndarray, n: int) -> np.ndarray:
    per = n // 5
    return np.concatenate(
        [rng.choice(np.flatnonzero(classes == c), per, replace=False) for c in range(5)]
    )


def _add(acc, cond, method, n, lo, hi, est, truth) -> None:  # type: ignore[no-untyped-def]
    acc.setdefault((cond, method, n), []).append((lo <= truth <= hi, hi - lo, abs(est - truth)))


def render(data: dict) -> str:
    rows = data["rows"]
    reps = rows[0]["reps"] if rows else 0
    s = data["settings"]
    lines = [
        f"`{data['command']}`: {s['worlds']} planted worlds × {s['systems']} new systems = "
        f"{reps} intervals per cell (± {196 * (0.05 * 0.95 / max(reps, 1)) ** 0.5:.1f} pts at "
        "95%); 500 tasks, one trial each; 95% intervals; truth: the full run's score (random, "
        "stratified), the full suite's expected score (anchors); width and mean absolute "
        "error in points; the full run costs 500 tasks",
        "",
        "| condition | n (share) | random: coverage / width / MAE | stratified "
        "| anchors, one fit chooses and scores (before) | anchors, split history (now) |",
        "|---|---|---|---|---|---|",
    ]
    cells = {(r["condition"], r["method"], r["n"]): r for r in rows}
    for cond in CONDITIONS:
        for n in sorted({r["n"] for r in rows}):
            out = [cond, f"{n} ({n / N_TASKS:.0%})"]
            for m in ("random", "stratified", "anchors_same", "anchors"):
                r = cells.get((cond, m, n))
                out.append(
                    f"{r['coverage']:.1%} / {100 * r['width']:.1f} / {100 * r['mae']:.1f} pts"
                    if r
                    else "—"
                )
            lines.append("| " + " | ".join(out) + " |")
    return "\n".join(lines)


MARK = re.compile(r"(<!-- begin: subset-coverage -->\n).*?(<!-- end: subset-coverage -->)", re.S)


def write_doc(check: bool) -> int:
    data = json.loads(OUT.read_text())
    doc = DOC.read_text()
    if not MARK.search(doc):
        print("docs/statistics.md: no subset-coverage markers to put the table between")
        return 1
    new = MARK.sub(lambda m: m.group(1) + render(data) + "\n" + m.group(2), doc)
    if check:
        if new != doc:
            print("docs/statistics.md: the subset-coverage table differs from", OUT.name)
            return 1
        return 0
    DOC.write_text(new)
    return 0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--worlds", type=int, default=10)
    parser.add_argument("--systems", type=int, default=100)
    parser.add_argument("--seed", type=int, default=27)
    parser.add_argument("--check", action="store_true", help="only check the docs' table")
    args = parser.parse_args()
    if args.check:
        sys.exit(write_doc(check=True))
    rows = simulate(args.worlds, args.systems, args.seed)
    command = (
        f"python -m benchmarks.subset_coverage --worlds {args.worlds} "
        f"--systems {args.systems} --seed {args.seed}"
    )
    data = {
        "command": command,
        "settings": {"worlds": args.worlds, "systems": args.systems, "seed": args.seed},
        "rows": rows,
    }
    OUT.write_text(json.dumps(data, indent=2) + "\n")
    write_doc(check=False)
    print(render(data))


if __name__ == "__main__":
    main()
