"""Metering: turn one model call into a trajectory event and a budget charge."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.config.models import Price
from harness.models.client import ModelUsage
from harness.models.pricing import cost

if TYPE_CHECKING:
    from harness.agents.base import AgentContext


def meter_call(
    ctx: AgentContext,
    usage: ModelUsage,
    price: Price | None,
    *,
    latency_s: float,
    content: str | None,
    info: dict[str, Any],
    steps: int = 0,
) -> float | None:
    """Record a ``model_call`` event with tokens, cost and latency, then charge the trial.

    The event is recorded before the charge, so the call that breaks a budget is in the
    trajectory; the charge then raises ``BudgetExceeded``. Returns the call's cost (None when
    the price or the usage is unknown).
    """
    dollars = cost(usage, price)
    if not usage.reported:
        info = {**info, "usage_reported": False}
    ctx.usage.model_calls += 1
    ctx.trajectory.record(
        "model_call",
        content=content,
        args=info,
        tokens_in=usage.input_tokens,
        tokens_out=usage.output_tokens,
        tokens_cached=usage.cached_tokens,
        cost_usd=dollars,
        latency_s=latency_s,
    )
    ctx.charge(
        tokens_in=usage.input_tokens,
        tokens_out=usage.output_tokens,
        tokens_cached=usage.cached_tokens,
        cost_usd=dollars,
        steps=steps,
        tokens_known=usage.reported,
    )
    return dollars


CHARS_PER_TOKEN = 4
"""The stated estimate for calls whose upstream reports no usage: characters / 4."""


def estimate_usage(request_chars: int, output_chars: int) -> ModelUsage:
    """Tokens estimated from text length, for budgets only (never reported as measured)."""
    return ModelUsage(
        input_tokens=-(-request_chars // CHARS_PER_TOKEN),
        output_tokens=-(-output_chars // CHARS_PER_TOKEN),
    )


__all__ = ["CHARS_PER_TOKEN", "estimate_usage", "meter_call"]
