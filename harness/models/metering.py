"""Metering: turn one model call into a trajectory event and a budget charge."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

from harness.config.models import Price
from harness.jsontypes import JSONValue
from harness.models.client import ModelUsage
from harness.models.pricing import cost

if TYPE_CHECKING:
    from harness.agents.base import AgentContext


class ModelCallInfo(TypedDict, total=False):
    """The ``args`` of a ``model_call`` trajectory event (the viewer and exports read them)."""

    model: JSONValue
    """The model that answered, as the upstream named it (else as the request did)."""
    requested_model: JSONValue
    """The model the program asked for, before the proxy put the arm's model in."""
    source: str
    """``proxy`` for calls of an external program through the metering proxy."""
    api: str
    """``chat``, ``responses`` or ``messages``."""
    stream: bool
    attempts: int
    """Upstream requests made for this call (retries included)."""
    tool_calls: list[str]
    """Names of the tools the model asked for."""
    finish_reason: str | None
    seed: int | None
    events: int
    """Server-sent events relayed (streams only)."""
    upstream_error: str
    """The error event that ended the stream, as the upstream worded it."""
    status: int | None
    """HTTP status of a failed call (None after a connection error)."""
    error: str
    """Why a call failed: ``model_unavailable``, ``stream_cut``, ``program_hung_up``."""
    usage_reported: bool
    """False when the upstream sent no usage: tokens and cost are unknown."""
    usage_estimate: str
    """How the budget estimated an unreported call's tokens."""


def with_info(info: ModelCallInfo, extra: ModelCallInfo) -> ModelCallInfo:
    """``info`` with ``extra``'s keys added or replaced (both checked against the shape)."""
    return {**info, **extra}


def meter_call(
    ctx: AgentContext,
    usage: ModelUsage,
    price: Price | None,
    *,
    latency_s: float,
    content: str | None,
    info: ModelCallInfo,
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


__all__ = ["CHARS_PER_TOKEN", "ModelCallInfo", "estimate_usage", "meter_call", "with_info"]
