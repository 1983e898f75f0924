"""How anchors are chosen and scored, and whether the interval then covers (issue 27).

The world of benchmarks/subset_coverage.py where 2PL holds (500 tasks, a ~ logN(0, 0.3²),
b ~ N(0, 1), 40 past systems, new systems θ ~ N(0, 1), one trial per anchor), and five ways
to pick n anchors and score them: ``same`` (one fit of all 40 chooses the most informative
and scores; the winner's curse), ``split`` (the shipped one: a seeded half of the systems
chooses, the other half's fit scores), ``split_whole`` (a half chooses, the fit of all 40
scores), ``shrunk`` (one fit of all 40, each task's log a shrunk toward 0 by its SE against
the world's own spread of log a, 0.3, before choosing; the fit of all 40 scores), ``random``
(n tasks at random, the fit of all 40 scores: no choice, no curse). Per cell the share of
95% intervals holding the new system's full-suite expected score, and the mean width; and
``same`` against ``split`` with histories of 10 and 20 systems (halves of 5 and 10).

Run: nice -n 10 python -m benchmarks.anchor_choice [--worlds 10 --systems 100]
(writes benchmarks/results/anchor_choice.json)
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from harness.stats import anchor_split, irt

OUT = Path(__file__).resolve().parent / "results" / "anchor_choice.json"
N_TASKS, HISTORY = 500, 40
NS = (25, 50, 100)
WAYS = ("same", "split", "split_whole", "shrunk", "random")
SMALL = (10, 20)


def _choices(rng: np.random.Generator, s: np.ndarray, n: int) -> dict[str, tuple]:
    """(anchor columns, scoring fit) per way of choosing."""
    m = np.ones_like(s)
    whole = irt.fit_2pl(s, m)
    split = anchor_split.split_fit(s, m, [str(i) for i in range(s.shape[0])], 0)
    chosen = irt.most_informative(split.choose.a, split.choose.b, split.recent_theta, n)
    sd = whole.se_a / whole.a  # SE of log a
    keep = (1 / sd**2) / (1 / sd**2 + 1 / 0.3**2)
    shrunk_a = np.exp(np.log(whole.a) * keep)
    return {
        "same": (irt.most_informative(whole.a, whole.b, whole.theta[:5], n), whole),
        "split": (chosen, split.score),
        "split_whole": (chosen, whole),
        "shrunk": (irt.most_informative(shrunk_a, whole.b, whole.theta[:5], n), whole),
        "random": (np.sort(rng.choice(N_TASKS, n, replace=False)), whole),
    }


def simulate(
    worlds: int, systems: int, seed: int, history: int = HISTORY, ways: tuple = WAYS
) -> list[dict]:
    """Rows per (way, n): coverage and mean width, ``history`` past systems a world."""
    rng = np.random.default_rng(seed)
    acc: dict[tuple[str, int], list[tuple[bool, float]]] = {}
    for _ in range(worlds):
        a, b = np.exp(rng.normal(0, 0.3, N_TASKS)), rng.normal(0, 1, N_TASKS)
        s = rng.binomial(1, irt.p2pl(rng.normal(0, 1, history)[:, None], a, b)).astype(float)
        picks = {n: _choices(rng, s, n) for n in NS}
        for theta in rng.normal(0, 1, systems):
            p = irt.p2pl(theta, a, b)
            y = rng.binomial(1, p).astype(float)
            for n, by_way in picks.items():
                for way in ways:
                    k, fit = by_way[way]
                    est = irt.ability(y[k], np.ones(n), fit.a[k], fit.b[k])
                    score = irt.predicted_score(est, fit.a, fit.b)
                    hit = score.lo <= p.mean() <= score.hi
                    acc.setdefault((way, n), []).append((hit, score.hi - score.lo))
    return [
        {
            "way": way,
            "history": history,
            "n": n,
            "reps": len(acc[(way, n)]),
            "coverage": float(np.mean([h for h, _ in acc[(way, n)]])),
            "width": float(np.mean([w for _, w in acc[(way, n)]])),
        }
        for way in ways
        for n in NS
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worlds", type=int, default=10)
    parser.add_argument("--systems", type=int, default=100)
    parser.add_argument("--seed", type=int, default=27)
    args = parser.parse_args()
    rows = simulate(args.worlds, args.systems, args.seed)
    for h in SMALL:  # smaller histories: the split's halves of 5 and 10 systems
        rows += simulate(args.worlds, args.systems, args.seed + h, h, ("same", "split"))
    command = (
        f"python -m benchmarks.anchor_choice --worlds {args.worlds} --systems {args.systems} "
        f"--seed {args.seed}"
    )
    OUT.write_text(json.dumps({"command": command, "rows": rows}, indent=2) + "\n")
    for r in rows:
        print(
            f"{r['way']:<12} history {r['history']:>2}, n {r['n']:>3}: {r['coverage']:.1%} / "
            f"{100 * r['width']:.1f} pts"
        )


if __name__ == "__main__":
    main()
