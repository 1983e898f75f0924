"""Power of the gate that will judge a run, by simulating that gate's decision.

The normal-approximation formula n = ((z_{1−α/2} + z_power)·SD(d)/δ)² (metrics guide) is a
plan for a z-test; the gate reads cautious bounds on a t with few degrees of freedom *and* an
exact sign test, and a measured second moment already holds the pilot's own δ². At the
cluster MDE the formula printed, the gate's power was 36% / 58% / 68% at 12 / 24 / 60
clusters. So a plan here simulates runs and reads each with ``GateRule`` (the gate's own
decision), and searches the effect (or the number of tasks) at which the share of simulated
runs the gate passes reaches the target power.

Models (stated in every plan):

- ``PilotModel`` (``harness plan --run``): the next run of the same suite — the pilot's tasks,
  clusters, weights and trial counts. Each task's success rate is drawn per simulated run
  from its empirical-Bayes posterior Beta(a_i + c_i, b_i + n_i − c_i), c_i and n_i pooled
  over both arms; the prior Beta(a_i, b_i) has Beta(a, b)'s within-cluster spread, centred on
  the task's cluster's shrunk rate (``cluster_priors``; Beta(a, b) fitted to all tasks by
  moments, agent-evaluation guide), so clusters that differ keep differing (shrinking every
  task to the suite's mean made the plan 7–9 points optimistic under strong cluster
  spread); the
  candidate's rate is the baseline's shifted on the logit scale by λ + s_c, the change's
  heterogeneity s_c ~ N(0, h²) per cluster (default h = 0.5: a change rarely helps every
  cluster alike; h = 0 assumes it does). The effect is the expected candidate − baseline
  difference of the suite's mean rate.
- ``independent_tasks`` (``harness plan --base --lift``): n independent single-trial tasks, a
  share ``discordance`` of them split by the arms, candidate − baseline = lift.
- ``threshold_tasks`` (``harness plan --bar --rate``): n independent single-trial tasks at the
  assumed rate, read by the threshold rule.

Randomness comes from a seeded generator with common random numbers across the effects
tried, so the power curve is monotone and the answer reproducible.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from harness.stats._util import RngLike, as_rng
from harness.stats.cluster_design import ClusterDesign
from harness.stats.gate_rule import IMPROVEMENT, NON_INFERIOR, GateRule

DEFAULT_RUNS = 2000
"""Simulated runs per point of the power curve (power ± about 0.9 points at 80%)."""


def _expit(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-9, 1 - 1e-9)
    return np.asarray(np.log(p / (1 - p)), dtype=float)


def passes(rule: GateRule, verdicts: np.ndarray) -> np.ndarray:
    """The verdicts that let the candidate ship under ``rule``."""
    ship = NON_INFERIOR if rule.rule == "non-inferiority" else IMPROVEMENT
    return np.asarray(verdicts == ship, dtype=bool)


@dataclass(frozen=True)
class Draws:
    """Random numbers of a batch of simulated runs."""

    p: np.ndarray
    """Baseline task rates (runs × tasks)."""
    spread: np.ndarray
    """The change's per-cluster deviation s_c, repeated per task."""
    ua: np.ndarray
    ub: np.ndarray
    """Uniforms of each arm's trials (runs × trials × tasks)."""


def cluster_priors(
    codes: np.ndarray, c: np.ndarray, n: np.ndarray, a: float, b: float
) -> tuple[np.ndarray, np.ndarray]:
    """Each task's prior Beta parameters, centred on its cluster's shrunk rate.

    Beta(a, b) fitted to all tasks has mean m and task-rate variance V = m(1 − m)/(a + b + 1);
    the part B of V between clusters is estimated by moments from the cluster totals
    (C_k/N_k − m)², each less its within-cluster expectation; cluster k's rate is shrunk to
    m + w_k(C_k/N_k − m) with w_k = B/(B + its sampling variance), and its tasks get a Beta
    with that mean and the within-cluster variance V − B. With B = 0 it is Beta(a, b) for every
    task; tasks in clusters that differ keep that difference in every simulated run."""
    g = int(codes.max()) + 1
    m, s = a / (a + b), a + b
    v = m * (1 - m) / (s + 1)
    big_c = np.bincount(codes, weights=c, minlength=g)
    big_n = np.bincount(codes, weights=n, minlength=g)
    q = np.bincount(codes, weights=n * n, minlength=g) / big_n
    r = big_c / big_n
    noise0 = (m * (1 - m) + v * (q - 1)) / big_n
    slope = 1 - 1 / big_n - (q - 1) / big_n
    between = float(np.sum((r - m) ** 2 - noise0) / max(float(np.sum(slope)), 1e-12))
    between = min(max(between, 0.0), 0.9 * v)
    if between <= 0 or g < 2:
        return np.full(codes.size, a), np.full(codes.size, b)
    noise = (m * (1 - m) - between + (v - between) * (q - 1)) / big_n
    mu = np.clip(m + between / (between + noise) * (r - m), 1e-3, 1 - 1e-3)
    conc = np.maximum(mu * (1 - mu) / (v - between) - 1, 0.2)
    return (conc * mu)[codes], (conc * (1 - mu))[codes]


@dataclass(frozen=True)
class PilotModel:
    """The next run of a suite, as a finished (pilot) run's counts describe it."""

    design: ClusterDesign
    trials_a: np.ndarray
    trials_b: np.ndarray
    post_a: np.ndarray
    """Posterior Beta parameters of each task's rate (a + c_i)."""
    post_b: np.ndarray
    """(b + n_i − c_i)."""
    heterogeneity: float = 0.5
    """SD h of the change between clusters, on the logit scale."""

    @classmethod
    def from_counts(
        cls,
        codes: np.ndarray,
        passed_a: np.ndarray,
        trials_a: np.ndarray,
        passed_b: np.ndarray,
        trials_b: np.ndarray,
        weights: np.ndarray | None = None,
        heterogeneity: float = 0.5,
    ) -> PilotModel:
        """Per task (aligned arrays): cluster code, each arm's passes and counted trials."""
        from harness.stats.betabinom import fit_beta_binomial

        c = np.asarray(passed_a) + np.asarray(passed_b)
        n = np.asarray(trials_a) + np.asarray(trials_b)
        if np.all(c == 0) or np.all(c == n):
            a, b = 0.5, 0.5  # no spread to fit: a Jeffreys prior per task
        else:
            try:
                a, b = fit_beta_binomial(c, n, method="moments" if n.min() >= 2 else "mle")
            except ValueError:
                a, b = 0.5, 0.5
        a, b = min(a, 1e4), min(b, 1e4)
        prior_a, prior_b = cluster_priors(np.asarray(codes), c, n, a, b)
        return cls(
            design=ClusterDesign.of(codes, weights),
            trials_a=np.asarray(trials_a, dtype=np.int64),
            trials_b=np.asarray(trials_b, dtype=np.int64),
            post_a=prior_a + c,
            post_b=prior_b + n - c,
            heterogeneity=heterogeneity,
        )

    def draw(self, runs: int, rng: np.random.Generator) -> Draws:
        """The random numbers of ``runs`` simulated runs (reused for every effect tried)."""
        n = self.post_a.size
        return Draws(
            p=rng.beta(self.post_a, self.post_b, size=(runs, n)),
            spread=self.heterogeneity
            * rng.standard_normal((runs, self.design.n_clusters))[:, self.design.codes],
            ua=rng.random((runs, int(self.trials_a.max()), n)),
            ub=rng.random((runs, int(self.trials_b.max()), n)),
        )

    def rates(self, u: np.ndarray, q: np.ndarray, trials: np.ndarray) -> np.ndarray:
        """Per-task success rates of one arm from its uniforms at task probabilities ``q``."""
        used = np.arange(u.shape[1])[None, :, None] < trials[None, None, :]
        return np.asarray(np.sum((u < q[:, None, :]) & used, axis=1) / trials, dtype=float)

    def power(self, rule: GateRule, shift: float, draws: Draws) -> tuple[float, float]:
        """(share of simulated runs the gate passes, mean planted effect) at logit shift λ."""
        q = _expit(_logit(draws.p) + shift + draws.spread)
        xa = self.rates(draws.ua, draws.p, self.trials_a)
        xb = self.rates(draws.ub, q, self.trials_b)
        verdicts = rule.paired(self.design, xa, xb, (self.trials_a, self.trials_b))
        effect = float(np.mean(self.design.mean(q) - self.design.mean(draws.p)))
        return float(np.mean(passes(rule, verdicts))), effect


@dataclass(frozen=True)
class Detectable:
    """The smallest effect the gate passes with the target power, as simulated."""

    effect: float | None
    """Expected candidate − baseline rate difference on the suite (None: not reachable)."""
    power: float
    """The simulated power at that effect."""
    shift: float
    """The logit shift λ that plants it."""
    runs: int


def simulated_mde(
    model: PilotModel,
    rule: GateRule,
    power: float = 0.8,
    runs: int = DEFAULT_RUNS,
    rng: RngLike = None,
) -> Detectable:
    """The smallest logit shift λ at which the gate's simulated power reaches ``power``: a
    coarse grid finds the first crossing (power can fall again near the ceiling, where an
    all-pass arm gets only the no-variation bound), bisection refines it (common random
    numbers, so the curve is smooth)."""
    draws = model.draw(runs, as_rng(rng))
    grid = np.linspace(0.0, 6.0, 25)[1:]
    found = None
    for lam in grid:
        pw, eff = model.power(rule, float(lam), draws)
        if pw >= power:
            found = (float(lam), pw, eff)
            break
    if found is None:
        return Detectable(effect=None, power=pw, shift=float(grid[-1]), runs=runs)
    hi = found[0]
    lo = hi - float(grid[1] - grid[0])
    best = (found[1], found[2], hi)
    for _ in range(8):
        mid = (lo + hi) / 2
        pw, eff = model.power(rule, mid, draws)
        if pw >= power:
            hi, best = mid, (pw, eff, mid)
        else:
            lo = mid
    return Detectable(effect=best[1], power=best[0], shift=best[2], runs=runs)


def independent_tasks_power(
    n: int,
    base: float,
    lift: float,
    discordance: float,
    rule: GateRule,
    runs: int = DEFAULT_RUNS,
    rng: RngLike = None,
) -> float:
    """Power of the gate on n independent single-trial tasks whose arms split a share
    ``discordance`` of them, candidate − baseline = ``lift`` (P(fixed) − P(broke))."""
    fixed, broke = (discordance + lift) / 2, (discordance - lift) / 2
    both = base - broke
    if min(fixed, broke, both, 1 - both - fixed - broke) < -1e-12:
        raise ValueError("base, lift and discordance do not describe a 2×2 table")
    gen = as_rng(rng)
    cells = gen.choice(
        4, size=(runs, n), p=np.clip([both, broke, fixed, 1 - both - broke - fixed], 0, 1)
    )
    xa = ((cells == 0) | (cells == 1)).astype(float)
    xb = ((cells == 0) | (cells == 2)).astype(float)
    verdicts = rule.paired(ClusterDesign.of(np.arange(n)), xa, xb)
    return float(np.mean(passes(rule, verdicts)))


def threshold_tasks_power(
    n: int, rate: float, rule: GateRule, runs: int = DEFAULT_RUNS, rng: RngLike = None
) -> float:
    """Power of the threshold rule on n independent single-trial tasks at ``rate``."""
    x = (as_rng(rng).random((runs, n)) < rate).astype(float)
    return float(np.mean(passes(rule, rule.threshold(ClusterDesign.of(np.arange(n)), x))))


def smallest_n(
    power_at: Callable[[int], float], start: int, target: float, limit: int = 20_000
) -> tuple[int | None, float]:
    """The smallest n (searched around ``start``) whose simulated power reaches ``target``;
    ``power_at(n)`` runs the simulation. (None, power at the limit) when even ``limit`` falls
    short."""
    lo, hi = max(2, start // 2), max(4, start)
    while power_at(hi) < target:
        lo, hi = hi, hi * 2
        if hi > limit:
            return None, power_at(limit)
    while hi - lo > max(1, hi // 100):
        mid = (lo + hi) // 2
        if power_at(mid) >= target:
            hi = mid
        else:
            lo = mid
    return hi, power_at(hi)
