"""Error rate and power of the gate's retry balance (``harness.release.evidence.balance_check``).

Null: both arms' trials are retried with the same infrastructure rate ``p``; any imbalance
called is a false alarm (a may-ship verdict wrongly turned inconclusive). Alternative: the
candidate's retried share is ``gap`` above the baseline's (an agent that turns failures into
retries, or infrastructure that fails one arm more); power is the share of runs the check
calls imbalanced. Every replication goes through ``balance_check`` itself, with the gate's
default bound (5 points) at 95% confidence.

Gate-level probe: an agent right half the time that, before a wrong answer, sends a request
the upstream refuses. When that refusal counts as infrastructure, the trial is retried (up to
3 attempts) and mostly ends passed; the table shows how often a non-inferiority gate (margin
5 points) lets that candidate, truly 10 points worse than a 60% baseline, ship — with the
balance check and without it — and with the refusal counted as the agent's failure (what the
harness does now).

Run: python benchmarks/retry_balance.py [--reps 2000] [--seed 1]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from harness.analysis.table import Trials

NS = (20, 60, 200)
RATES = (0.02, 0.05, 0.10)
GAPS = (0.05, 0.10, 0.20, 0.50)


def _columns(arm: str, retried: np.ndarray, passed: np.ndarray | None = None) -> dict:
    """One arm's trials as columns: one task each, retried trials took two attempts."""
    n = retried.size
    ok = np.ones(n, bool) if passed is None else passed.astype(bool)
    ids = np.array([f"t{i:03d}" for i in range(n)], dtype=object)
    return {
        "arm": np.full(n, arm, dtype=object),
        "task_id": ids,
        "trial_index": np.zeros(n, dtype=np.int64),
        "seed": np.arange(n),
        "cluster": ids,
        "task_class": np.full(n, "default", dtype=object),
        "status": np.where(ok, "passed", "failed").astype(object),
        "attempts": np.where(retried, 2, 1),
    }


def _rows(arm: str, retried: np.ndarray, passed: np.ndarray | None = None) -> Trials:
    return Trials.from_columns(_columns(arm, retried, passed))


def _both(a: dict, b: dict) -> Trials:
    return Trials.from_columns({k: np.concatenate([a[k], b[k]]) for k in a})


def called_rate(rng: np.random.Generator, n: int, p_base: float, p_cand: float, reps: int) -> float:
    """Share of replications ``balance_check`` calls imbalanced."""
    from harness.release.evidence import balance_check

    hits = 0
    for _ in range(reps):
        b = _rows("base", rng.random(n) < p_base)
        c = _rows("cand", rng.random(n) < p_cand)
        hits += balance_check(("base", b), ("cand", c), 0.05, 0.95)["status"] == "imbalanced"
    return hits / reps


def probe_ship_rate(
    rng: np.random.Generator, n: int, reps: int, *, balance: bool, refusal_is_infra: bool
) -> float:
    """How often the gaming candidate (50% vs a 60% baseline) passes non-inferiority."""
    from harness.config.models import GatePolicy
    from harness.release import gate as gate_module

    policy = GatePolicy(rule="non-inferiority", margin=0.05)
    if not balance:
        policy = policy.model_copy(update={"max_retry_gap": 1.0})
    shipped = 0
    for _ in range(reps):
        base = rng.random(n) < 0.6
        first = rng.random(n) < 0.5
        cand, retried = first.copy(), np.zeros(n, bool)
        if refusal_is_infra:  # a failure becomes a retry: up to two more draws at 50%
            for _attempt in range(2):
                again = ~cand
                retried |= again
                cand[again] = rng.random(int(again.sum())) < 0.5
        trials = _both(_columns("base", np.zeros(n, bool), base), _columns("cand", retried, cand))
        g = gate_module.evaluate_gate(trials, policy, arms=["base", "cand"])
        shipped += g["may_ship"]
    return shipped / reps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    t0 = time.time()
    print(f"retry balance: bound 5 points, 95% confidence, {args.reps} replications per cell\n")
    print(
        "| trials per arm | "
        + " | ".join(f"null p={p:.0%}" for p in RATES)
        + " | "
        + " | ".join(f"gap +{g:.0%}" for g in GAPS)
        + " |"
    )
    print("|---" * (1 + len(RATES) + len(GAPS)) + "|")
    for n in NS:
        nulls = [called_rate(rng, n, p, p, args.reps) for p in RATES]
        alts = [called_rate(rng, n, 0.02, 0.02 + g, args.reps) for g in GAPS]
        cells = [f"{x:.3f}" for x in nulls + alts]
        print(f"| {n} | " + " | ".join(cells) + " |")
    reps = max(200, args.reps // 4)
    print(f"\ngate-level probe, non-inferiority margin 5 points, 60 tasks, {reps} replications")
    for label, kw in (
        (
            "refusal retried as infrastructure, no balance check",
            dict(balance=False, refusal_is_infra=True),
        ),
        (
            "refusal retried as infrastructure, balance check",
            dict(balance=True, refusal_is_infra=True),
        ),
        (
            "refusal is the agent's failure (the harness now)",
            dict(balance=True, refusal_is_infra=False),
        ),
    ):
        print(f"- {label}: ships {probe_ship_rate(rng, 60, reps, **kw):.3f}")
    print(f"\n({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
