"""Model access: an OpenAI-compatible client over httpx, usage and pricing, and a metering
proxy for external agent programs."""

from __future__ import annotations

from harness.models.client import (
    ChatClient,
    ChatResponse,
    ModelRequestRejected,
    ModelUsage,
    ToolCallRequest,
    aclose_clients,
)
from harness.models.pricing import DEFAULT_PRICES, cost, lookup_price, price_for
from harness.models.settings import expand_env

__all__ = [
    "DEFAULT_PRICES",
    "ChatClient",
    "ChatResponse",
    "ModelRequestRejected",
    "ModelUsage",
    "ToolCallRequest",
    "aclose_clients",
    "cost",
    "expand_env",
    "lookup_price",
    "price_for",
]
