"""A pass rate graded by an imperfect judge, corrected for the judge's errors.

A judge with sensitivity Se (it passes a trial people would pass) and specificity Sp (it
fails a trial people would fail) reports, on a population whose true pass rate is π, the
judged rate p = Se·π + (1 − Sp)(1 − π). Solving for π gives the Rogan–Gladen estimator
(Rogan & Gladen 1978):

    π̂ = (p̂ + Sp − 1) / (Se + Sp − 1),    bounded to [0, 1],

with Se and Sp read from a calibration set (trials with both a judge verdict and a human
label). Its interval must carry both sources of error: the sampling error of p̂ (clustered,
from ``mean_estimate``) and the error of Se and Sp from a calibration set of a few hundred
labels at most. Formulas and the coverage measured by simulation: docs/statistics.md,
"Rates corrected for judge error".
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import TypedDict, cast

import numpy as np

from harness.stats._util import as_rng, check_probability

CORRECTION_DRAWS = 20_000
"""Monte Carlo draws behind one corrected interval (its percentile error is below 0.002)."""

_SEED = 26
"""The draws are seeded: one run's corrected interval is the same on every view."""


@dataclass(frozen=True)
class Calibration:
    """Judge verdicts against human labels on the calibration trials (pass is positive)."""

    true_pos: int
    """Judge passed, people passed."""
    false_neg: int
    """Judge failed, people passed."""
    true_neg: int
    """Judge failed, people failed."""
    false_pos: int
    """Judge passed, people failed."""

    @property
    def n(self) -> int:
        return self.true_pos + self.false_neg + self.true_neg + self.false_pos

    @property
    def sensitivity(self) -> float:
        pos = self.true_pos + self.false_neg
        return self.true_pos / pos if pos else float("nan")

    @property
    def specificity(self) -> float:
        neg = self.true_neg + self.false_pos
        return self.true_neg / neg if neg else float("nan")

    @classmethod
    def of(cls, judged: object, human: object) -> Calibration:
        """Count the four cells from paired 0/1 arrays (judge's verdict, human label)."""
        j = np.asarray(judged, dtype=bool)
        h = np.asarray(human, dtype=bool)
        if j.shape != h.shape or j.ndim != 1:
            raise ValueError("judged and human must be 1-D arrays of one length")
        return cls(
            true_pos=int(np.sum(j & h)),
            false_neg=int(np.sum(~j & h)),
            true_neg=int(np.sum(~j & ~h)),
            false_pos=int(np.sum(j & ~h)),
        )


class CorrectedRecord(TypedDict):
    """``Corrected.as_dict()``: the same fields as JSON."""

    estimate: float
    lo: float
    hi: float
    raw: float
    sensitivity: float
    specificity: float
    n_calibration: int
    confidence: float
    method: str
    warning: str | None


@dataclass(frozen=True)
class Corrected:
    """A corrected rate (or paired delta) with the interval carrying both errors."""

    estimate: float
    lo: float
    hi: float
    raw: float
    """The judged value it was corrected from."""
    sensitivity: float
    specificity: float
    n_calibration: int
    confidence: float
    method: str
    warning: str | None = None

    def as_dict(self) -> CorrectedRecord:
        return cast(CorrectedRecord, asdict(self))


class JudgeNotInformative(ValueError):
    """The calibration set cannot correct anything: no passes or no fails among its labels,
    or a judge that does no better than chance (Se + Sp <= 1)."""


def rogan_gladen(judged_rate: float, sensitivity: float, specificity: float) -> float:
    """The Rogan–Gladen estimate (p + Sp − 1)/(Se + Sp − 1), bounded to [0, 1].

    Estimand: the rate people would give, from the judged rate p of a judge with the given
    sensitivity and specificity (Rogan & Gladen 1978). Needs Se + Sp > 1.
    """
    check_probability(judged_rate, "judged_rate")
    youden = sensitivity + specificity - 1.0
    if not youden > 0:
        raise JudgeNotInformative(
            f"the judge does no better than chance (sensitivity {sensitivity:.3f} + "
            f"specificity {specificity:.3f} <= 1)"
        )
    return float(min(1.0, max(0.0, (judged_rate + specificity - 1.0) / youden)))


def _check(cal: Calibration) -> None:
    if cal.true_pos + cal.false_neg == 0 or cal.true_neg + cal.false_pos == 0:
        raise JudgeNotInformative(
            "the calibration set needs trials people passed and trials people failed "
            f"({cal.true_pos + cal.false_neg} passed, {cal.true_neg + cal.false_pos} failed)"
        )
    if not cal.sensitivity + cal.specificity > 1.0:
        raise JudgeNotInformative(
            f"the judge does no better than chance on its calibration set (sensitivity "
            f"{cal.sensitivity:.3f} + specificity {cal.specificity:.3f} <= 1)"
        )


def _accuracy_draws(cal: Calibration, gen: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Se and Sp drawn from their Jeffreys posteriors Beta(x + ½, n − x + ½)."""
    se = gen.beta(cal.true_pos + 0.5, cal.false_neg + 0.5, CORRECTION_DRAWS)
    sp = gen.beta(cal.true_neg + 0.5, cal.false_pos + 0.5, CORRECTION_DRAWS)
    return se, sp


def _noise(gen: np.random.Generator, df: float | None) -> np.ndarray:
    """The main estimate's standardized error: Student t on the estimate's degrees of
    freedom (CR2 with Imbens–Kolesár df, as its own interval), normal without them."""
    if df is None or not np.isfinite(df):
        return gen.standard_normal(CORRECTION_DRAWS)
    return gen.standard_t(max(df, 1.0), CORRECTION_DRAWS)


def _warning(cal: Calibration, youden: np.ndarray) -> str | None:
    share = float(np.mean(youden <= 0.05))
    if share > 0.025:
        return (
            f"the calibration set ({cal.n} labels) cannot rule out a judge near chance: "
            "the corrected interval is wide"
        )
    return None


def corrected_rate(
    judged: float,
    judged_se: float,
    calibration: Calibration,
    *,
    df: float | None = None,
    confidence: float = 0.95,
    bounds: tuple[float, float] | None = None,
) -> Corrected:
    """Rogan–Gladen corrected pass rate with an interval carrying both errors.

    Estimand: the pass rate people would give (π above), over the population the run's
    clusters were drawn from. ``judged`` is the judged pass rate and ``judged_se`` its
    standard error, clustered as every rate is (``mean_estimate``). The interval is
    Monte Carlo over both errors (a parametric bootstrap in the manner of Lang & Reiczigel
    2014, who show the plain delta method undercovers): p* = p̂ + se·T with T Student t on
    the estimate's ``df`` (normal when None), Se* and Sp* from
    their Jeffreys posteriors on the calibration counts, π* = (p* + Sp* − 1)/(Se* + Sp* − 1)
    bounded to [0, 1]; the interval is the percentiles of π*. Seeded, so it is the same on
    every view. Assumes the calibration trials are a random sample of the judged trials
    (their judge setup the same) and the labels are the truth.

    ``bounds``: the judged rate's own decision bounds at ``confidence`` (the gate's cautious
    bounds, ``mean_estimate(cautious=True)``, skewed near the ends of the scale). The
    result is then a decision bound as careful as the raw gate's: on each side the more
    cautious of the interval above and the same Monte Carlo with p* drawn on a split scale,
    p* = p̂ + T·(p̂ − L)/q below and p̂ + T·(U − p̂)/q above (q the two-sided quantile of T at
    ``confidence``), so that with Se and Sp known it returns the judged bounds [L, U]
    corrected.
    """
    check_probability(judged, "judged")
    _check(calibration)
    gen = as_rng(_SEED)
    se, sp = _accuracy_draws(calibration, gen)
    noise = _noise(gen, df)
    youden = se + sp - 1.0
    draws = _corrected_draws(judged + judged_se * noise, se, sp)
    estimate = rogan_gladen(judged, calibration.sensitivity, calibration.specificity)
    method = (
        f"Rogan–Gladen, corrected with {calibration.n} human labels; interval over the "
        "clustered sampling error and the judge's calibration error"
    )
    out = _finish(draws, estimate, judged, calibration, youden, confidence, method)
    if bounds is None:
        return out
    split = judged + _split_scale(noise, judged, bounds, df, confidence)
    skewed = _finish(
        _corrected_draws(split, se, sp), estimate, judged, calibration, youden, confidence, ""
    )
    method += (
        f"; decision bounds: the more cautious, on each side, of that and the same over the "
        f"judged rate's decision bounds [{bounds[0]:.3f}, {bounds[1]:.3f}]"
    )
    return replace(out, lo=min(out.lo, skewed.lo), hi=max(out.hi, skewed.hi), method=method)


def _corrected_draws(p: np.ndarray, se: np.ndarray, sp: np.ndarray) -> np.ndarray:
    """π* = (p* + Sp* − 1)/(Se* + Sp* − 1) bounded to [0, 1] (a judge drawn no better than
    chance gives the end its numerator points to)."""
    youden = se + sp - 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        draws = np.where(youden > 0, (p + sp - 1.0) / youden, np.where(p + sp - 1 > 0, 1.0, 0.0))
    return np.clip(draws, 0.0, 1.0)


def _split_scale(
    noise: np.ndarray,
    judged: float,
    bounds: tuple[float, float],
    df: float | None,
    confidence: float,
) -> np.ndarray:
    """The judged rate's error drawn to reproduce its own (skewed) bounds at ``confidence``:
    T scaled by (p̂ − L)/q below the estimate and (U − p̂)/q above it."""
    from harness.stats._util import z_two_sided
    from harness.stats.mean_intervals import t_quantile

    if df is None or not np.isfinite(df):
        q = z_two_sided(confidence)
    else:
        q = float(t_quantile(np.array([max(df, 1.0)]), confidence)[0])
    lo, hi = bounds
    below, above = max(judged - lo, 0.0) / q, max(hi - judged, 0.0) / q
    return np.asarray(np.where(noise < 0, below, above) * noise, dtype=float)


def _finish(
    draws: np.ndarray,
    estimate: float,
    raw: float,
    calibration: Calibration,
    youden: np.ndarray,
    confidence: float,
    method: str,
) -> Corrected:
    """The record: the draws' percentile interval (widened to hold the estimate)."""
    tail = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(draws, [tail, 1.0 - tail])
    return Corrected(
        estimate=estimate,
        lo=float(min(lo, estimate)),
        hi=float(max(hi, estimate)),
        raw=raw,
        sensitivity=calibration.sensitivity,
        specificity=calibration.specificity,
        n_calibration=calibration.n,
        confidence=confidence,
        method=method,
        warning=_warning(calibration, youden),
    )


def corrected_delta(
    delta: float,
    delta_se: float,
    calibration: Calibration,
    *,
    df: float | None = None,
    confidence: float = 0.95,
) -> Corrected:
    """A paired delta between two arms judged by one setup, corrected for judge error.

    Estimand: π_B − π_A, the difference people would see. With one judge for both arms the
    specificity term cancels: π_B − π_A = (p_B − p_A)/(Se + Sp − 1), bounded to [−1, 1].
    ``delta`` is the judged paired delta and ``delta_se`` its paired, clustered standard
    error (``df`` its degrees of freedom); the interval is Monte Carlo over that error and
    the calibration error as in ``corrected_rate``. Assumes both arms' trials share the judge's Se and Sp.
    """
    if not -1.0 <= delta <= 1.0:
        raise ValueError(f"delta must lie in [-1, 1], got {delta!r}")
    _check(calibration)
    gen = as_rng(_SEED)
    se, sp = _accuracy_draws(calibration, gen)
    d = delta + delta_se * _noise(gen, df)
    youden = se + sp - 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        draws = np.where(youden > 0, d / youden, np.sign(d))
    draws = np.clip(draws, -1.0, 1.0)
    youden_hat = calibration.sensitivity + calibration.specificity - 1.0
    estimate = float(np.clip(delta / youden_hat, -1.0, 1.0))
    method = (
        f"paired delta / (Se + Sp − 1), corrected with {calibration.n} human labels; "
        "interval over the paired clustered error and the calibration error"
    )
    return _finish(draws, estimate, delta, calibration, youden, confidence, method)
