"""Error rates and coverage of the gate's decisions and the report's intervals, cell by cell.

Planted population (logit scale): a task's success probability is expit(μ + u_c + v_i),
cluster effect u_c ~ N(0, σ_c²) (mild σ_c = 0.4, strong 1.2), task effect v_i ~ N(0, 0.8²);
μ is solved so that the population mean rate is exactly the cell's value (Gauss–Hermite
quadrature). Cluster sizes are equal (8 tasks) or unequal (2, 4, 8, 18 repeating). Each task
runs ``trials`` trials (1 or 3). Paired cells: the candidate's task probability is
expit(μ + u_c + v_i + λ + s_c), effect heterogeneity s_c ~ N(0, 0.5²) per cluster, λ solved
so that the population difference is exactly the cell's δ; the arms draw trials
independently.

Every number is read through the functions users get, on many planted runs at once:
``GateRule.threshold`` / ``GateRule.paired`` (the gate's verdicts: cautious decision bounds
and the exact sign test) and ``rate_intervals`` / ``paired_intervals`` (the intervals the
report and compare print). "before" is the symmetric CR2 + t bound the gate used until now.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import product

import numpy as np

from harness.stats.cluster_design import ClusterDesign
from harness.stats.gate_rule import IMPROVEMENT, NON_INFERIOR, REGRESSION, GateRule
from harness.stats.mean_intervals import paired_intervals, rate_intervals, t_quantile

SD_TASK, SD_HET = 0.8, 0.5
CLUSTER_SD = {"mild": 0.4, "strong": 1.2}
UNEQUAL = (2, 4, 8, 18)
EQUAL_SIZE = 8
MARGIN = 0.05


def _expit(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


_GH = np.polynomial.hermite.hermgauss(80)


def normal_mean(f, mean: float, sd: float) -> float:
    """E[f(X)] for X ~ N(mean, sd²) by Gauss–Hermite quadrature."""
    x, w = _GH
    return float(np.sum(w * f(mean + math.sqrt(2.0) * sd * x)) / math.sqrt(math.pi))


def solve(f, target: float, lo: float = -12.0, hi: float = 12.0) -> float:
    """The root of the increasing f(x) = target by bisection."""
    for _ in range(100):
        mid = (lo + hi) / 2
        if f(mid) > target:
            hi = mid
        else:
            lo = mid
    return (lo + hi) / 2


def sizes_of(n_clusters: int, equal: bool) -> np.ndarray:
    if equal:
        return np.full(n_clusters, EQUAL_SIZE)
    return np.array([UNEQUAL[i % len(UNEQUAL)] for i in range(n_clusters)])


@dataclass(frozen=True)
class Cell:
    kind: str
    """'threshold' (truth at the bar), 'non-inferiority' (truth at −margin), 'improvement'
    (truth 0) or 'pass^k'."""
    value: float
    """The bar, or the baseline rate of a paired cell."""
    clusters: int
    equal: bool
    spread: str
    trials: int

    @property
    def name(self) -> str:
        sizes = "equal" if self.equal else "unequal"
        return f"{self.kind} {self.value:g}, {self.clusters} {sizes} clusters, {self.spread}, T={self.trials}"


def plant(
    rng: np.random.Generator, cell: Cell, reps: int, lift: float = 0.0, het: float = 0.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(codes, baseline probabilities, candidate probabilities) for ``reps`` planted suites."""
    sizes = sizes_of(cell.clusters, cell.equal)
    codes = np.repeat(np.arange(cell.clusters), sizes)
    sd_c = CLUSTER_SD[cell.spread]
    mu = mu_for(cell.value, sd_c)
    u = rng.normal(0.0, sd_c, (reps, cell.clusters))[:, codes]
    v = rng.normal(0.0, SD_TASK, (reps, codes.size))
    eta = mu + u + v
    s = rng.normal(0.0, het, (reps, cell.clusters))[:, codes] if het else 0.0
    return codes, _expit(eta), _expit(eta + lift + s)


def mu_for(mean_rate: float, sd_cluster: float) -> float:
    sd = math.hypot(sd_cluster, SD_TASK)
    return solve(lambda m: normal_mean(_expit, m, sd), mean_rate)


def lift_for(base: float, sd_cluster: float, delta: float) -> float:
    """λ with E[expit(η + λ + s)] − E[expit(η)] = δ."""
    mu = mu_for(base, sd_cluster)
    sd_a = math.hypot(sd_cluster, SD_TASK)
    sd_b = math.hypot(sd_a, SD_HET)
    return solve(lambda lam: normal_mean(_expit, mu + lam, sd_b) - base, delta, -8, 8)


def _symmetric_lower(design: ClusterDesign, x: np.ndarray, level: float) -> np.ndarray:
    mean, se, df = design.cr2(x)
    return mean - t_quantile(df, level) * se


def threshold_cell(rng: np.random.Generator, cell: Cell, reps: int) -> dict[str, float]:
    """Truth exactly at the bar: how often the gate says 'meets the bar' / 'below the bar'."""
    codes, p, _ = plant(rng, cell, reps)
    x = rng.binomial(cell.trials, p) / cell.trials
    design = ClusterDesign.of(codes)
    rule = GateRule("threshold", bar=cell.value)
    v = rule.threshold(design, x, np.full(codes.size, cell.trials))
    shown = rate_intervals(design, x, 0.95)
    return {
        "false pass": float(np.mean(v == IMPROVEMENT)),
        "false fail": float(np.mean(v == REGRESSION)),
        "coverage": float(np.mean((shown.lo <= cell.value) & (cell.value <= shown.hi))),
        "false pass before": float(np.mean(_symmetric_lower(design, x, 0.90) > cell.value)),
    }


def paired_cell(rng: np.random.Generator, cell: Cell, reps: int) -> dict[str, float]:
    """Truth exactly at the rule's boundary (δ = −margin, or 0): how often the gate ships."""
    delta = -MARGIN if cell.kind == "non-inferiority" else 0.0
    sd_c = CLUSTER_SD[cell.spread]
    lift = lift_for(cell.value, sd_c, delta)
    codes, pa, pb = plant(rng, cell, reps, lift=lift, het=SD_HET)
    xa = rng.binomial(cell.trials, pa) / cell.trials
    xb = rng.binomial(cell.trials, pb) / cell.trials
    design = ClusterDesign.of(codes)
    if cell.kind == "non-inferiority":
        rule, ship = GateRule("non-inferiority", margin=MARGIN), NON_INFERIOR
    else:
        rule, ship = GateRule("improvement"), IMPROVEMENT
    trials = (np.full(codes.size, cell.trials),) * 2
    v = rule.paired(design, xa, xb, trials)
    shown = paired_intervals(design, xa, xb, 0.95, trials=trials)
    return {
        "false pass": float(np.mean(v == ship)),
        "false fail": float(np.mean(v == REGRESSION)),
        "coverage": float(np.mean((shown.lo <= delta) & (delta <= shown.hi))),
        "false pass before": float(np.mean(_symmetric_lower(design, xb - xa, 0.90) > delta)),
    }


def pass_k_cell(rng: np.random.Generator, cell: Cell, reps: int, k: int) -> dict[str, float]:
    """Coverage of the report's pass^k interval (mean of unbiased per-task C(c,k)/C(T,k))."""
    from harness.stats import pass_hat_k

    codes, p, _ = plant(rng, cell, reps)
    c = rng.binomial(cell.trials, p)
    x = np.asarray(pass_hat_k(np.full_like(c, cell.trials), c, k), dtype=float)
    sd = math.hypot(CLUSTER_SD[cell.spread], SD_TASK)
    truth = normal_mean(lambda e: _expit(e) ** k, mu_for(cell.value, CLUSTER_SD[cell.spread]), sd)
    shown = rate_intervals(ClusterDesign.of(codes), x, 0.95)
    return {
        "coverage": float(np.mean((shown.lo <= truth) & (truth <= shown.hi))),
        "miss above": float(np.mean(shown.hi < truth)),
        "truth": truth,
    }


def grid(quick: bool = False) -> list[tuple[Cell, int | None]]:
    """Every cell (with k for pass^k cells); ``quick``: a small sample of them for CI."""
    cells: list[tuple[Cell, int | None]] = []
    bars = (0.5, 0.7, 0.8, 0.9, 0.95)
    for bar, g, eq, spread, t in product(bars, (12, 24, 60), (False, True), CLUSTER_SD, (1, 3)):
        cells.append((Cell("threshold", bar, g, eq, spread, t), None))
    for kind, base, g, eq, spread, t in product(
        ("non-inferiority", "improvement"),
        (0.5, 0.8, 0.9, 0.95),
        (12, 24, 60),
        (False, True),
        CLUSTER_SD,
        (1, 3),
    ):
        cells.append((Cell(kind, base, g, eq, spread, t), None))
    for base, g, spread, k in product((0.5, 0.8, 0.9), (12, 24, 60), CLUSTER_SD, (2, 3)):
        cells.append((Cell("pass^k", base, g, False, spread, 4), k))
    if quick:
        keep = {
            ("threshold", 0.9, 12, False, "strong", 3),
            ("threshold", 0.8, 24, False, "mild", 1),
            ("non-inferiority", 0.9, 24, False, "strong", 1),
            ("improvement", 0.8, 12, False, "strong", 3),
        }
        cells = [
            (c, k)
            for c, k in cells
            if (c.kind, c.value, c.clusters, c.equal, c.spread, c.trials) in keep
            or (
                c.kind == "pass^k"
                and c.value == 0.8
                and c.clusters == 12
                and k == 3
                and c.spread == "strong"
            )
        ]
    return cells


def run_cell(cell: Cell, k: int | None, reps: int, seed: int) -> dict:
    """One cell's row: its parameters, the replications and the measured rates."""
    key = [seed, cell.clusters, int(cell.equal), int(round(cell.value * 100)), cell.trials]
    key += [list(CLUSTER_SD).index(cell.spread), len(cell.kind), k or 0]
    rng = np.random.default_rng(key)
    if cell.kind == "threshold":
        out = threshold_cell(rng, cell, reps)
    elif cell.kind == "pass^k":
        assert k is not None
        out = pass_k_cell(rng, cell, reps, k)
    else:
        out = paired_cell(rng, cell, reps)
    return {
        "kind": cell.kind if k is None else f"pass^{k}",
        "value": cell.value,
        "clusters": cell.clusters,
        "sizes": "equal" if cell.equal else "unequal",
        "spread": cell.spread,
        "trials": cell.trials,
        "reps": reps,
        **out,
    }
