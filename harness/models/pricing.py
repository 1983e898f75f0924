"""Model prices and the cost of a model call.

``DEFAULT_PRICES`` is a convenience table of list prices (US dollars per million tokens) for a
handful of well-known models, as published by their providers when this file was written.
Prices change and discounts differ per account: treat the table as a default that users
override by setting ``price`` on the arm's ``model`` in the suite. A model in neither place has
an unknown price, and its cost is reported as unknown (``None``), never as zero.
"""

from __future__ import annotations

from typing import Protocol

from harness.config.models import ModelSettings, Price

DEFAULT_PRICES: dict[str, Price] = {
    # OpenAI
    "gpt-4o": Price(input=2.50, cached_input=1.25, output=10.00),
    "gpt-4o-mini": Price(input=0.15, cached_input=0.075, output=0.60),
    "gpt-4.1": Price(input=2.00, cached_input=0.50, output=8.00),
    "gpt-4.1-mini": Price(input=0.40, cached_input=0.10, output=1.60),
    "gpt-4.1-nano": Price(input=0.10, cached_input=0.025, output=0.40),
    "o3": Price(input=2.00, cached_input=0.50, output=8.00),
    "o3-mini": Price(input=1.10, cached_input=0.55, output=4.40),
    "o4-mini": Price(input=1.10, cached_input=0.275, output=4.40),
    "gpt-5": Price(input=1.25, cached_input=0.125, output=10.00),
    "gpt-5-mini": Price(input=0.25, cached_input=0.025, output=2.00),
    "gpt-5-nano": Price(input=0.05, cached_input=0.005, output=0.40),
    # Anthropic; cached_input = cache reads, cache_write = 5-minute cache writes
    "claude-3-5-haiku": Price(input=0.80, cached_input=0.08, output=4.00, cache_write=1.00),
    "claude-3-5-sonnet": Price(input=3.00, cached_input=0.30, output=15.00, cache_write=3.75),
    "claude-3-7-sonnet": Price(input=3.00, cached_input=0.30, output=15.00, cache_write=3.75),
    "claude-sonnet-4": Price(input=3.00, cached_input=0.30, output=15.00, cache_write=3.75),
    "claude-opus-4": Price(input=15.00, cached_input=1.50, output=75.00, cache_write=18.75),
}
"""Default list prices, $ per million tokens. Override with ``ModelSettings.price``."""


class TokenCounts(Protocol):
    """A call's token counts (read-only: usage records are frozen)."""

    @property
    def input_tokens(self) -> int: ...
    @property
    def cached_tokens(self) -> int: ...
    @property
    def output_tokens(self) -> int: ...


def lookup_price(model: str, table: dict[str, Price] | None = None) -> Price | None:
    """The table's price for ``model``: an exact name, else the longest known prefix (so
    dated snapshots like ``gpt-4o-mini-2024-07-18`` find ``gpt-4o-mini``), also after a
    ``provider/`` prefix is dropped. None when unknown."""
    table = DEFAULT_PRICES if table is None else table
    candidates = [model, model.rsplit("/", 1)[-1]]
    for name in candidates:
        if name in table:
            return table[name]
    for name in candidates:
        known = [k for k in table if name.startswith(k + "-")]
        if known:
            return table[max(known, key=len)]
    return None


def price_for(settings: ModelSettings | None) -> Price | None:
    """The price of the arm's model: its own ``price`` first, then the default table."""
    if settings is None:
        return None
    return settings.price or lookup_price(settings.name)


def cost(usage: TokenCounts, price: Price | None) -> float | None:
    """US dollars for one call's usage, or None when the price (or the usage) is unknown.

    ``input_tokens`` includes the cached ones; cache reads are billed at
    ``price.cached_input`` and cache writes (``cache_write_tokens``, Anthropic) at
    ``price.cache_write`` (either falls back to the input price when the table has none).
    """
    if price is None or not getattr(usage, "reported", True):
        return None
    cached = min(usage.cached_tokens, usage.input_tokens)
    written = min(getattr(usage, "cache_write_tokens", 0), usage.input_tokens - cached)
    cached_rate = price.input if price.cached_input is None else price.cached_input
    write_rate = price.input if price.cache_write is None else price.cache_write
    dollars = (
        (usage.input_tokens - cached - written) * price.input
        + cached * cached_rate
        + written * write_rate
        + usage.output_tokens * price.output
    )
    return dollars / 1_000_000


__all__ = ["DEFAULT_PRICES", "cost", "lookup_price", "price_for"]
