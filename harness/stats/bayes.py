"""Beta-binomial posterior for a pass rate: probabilities that answer release questions."""

from __future__ import annotations


def _posterior(successes: float, n: float, prior: tuple[float, float]) -> tuple[float, float]:
    a0, b0 = prior
    if a0 <= 0 or b0 <= 0:
        raise ValueError("prior parameters must be positive")
    if not 0 <= successes <= n:
        raise ValueError("need 0 <= successes <= n")
    return a0 + successes, b0 + n - successes


def posterior_prob_above(
    successes: float, n: float, threshold: float, prior: tuple[float, float] = (1.0, 1.0)
) -> float:
    """Posterior probability that the pass rate exceeds ``threshold``.

    Model (estimands guide): p ~ Beta(α, β), successes | p ~ Binomial(n, p), so
    p | data ~ Beta(α + s, β + n − s) and the answer is its upper tail at the threshold.
    Estimands guide: 194/200 under a uniform prior gives P(p > 0.95) ≈ 0.88. Assumes independent
    tasks exchangeable under one rate; the prior is stated, not hidden.
    """
    from scipy.stats import beta

    a, b = _posterior(successes, n, prior)
    return float(beta.sf(threshold, a, b))


def posterior_interval(
    successes: float, n: float, confidence: float = 0.95, prior: tuple[float, float] = (1.0, 1.0)
) -> tuple[float, float]:
    """Equal-tailed credible interval of the Beta posterior (the Bayesian alternative of the estimands guide)."""
    from scipy.stats import beta

    a, b = _posterior(successes, n, prior)
    tail = (1.0 - confidence) / 2.0
    return float(beta.ppf(tail, a, b)), float(beta.ppf(1.0 - tail, a, b))
