"""What this process knows about each model upstream while a run goes on.

Two facts per (event loop, base URL), shared by every client of the run (the ``llm``
agent's, simulated users', the metering proxies'):

- **down**: the run's circuit breaker stopped the run because of this upstream; a new
  request to it fails at once with the breaker's cause instead of being retried, so the
  trials in flight end within seconds and stay unfinished (a resume runs them).
- **retry causes already printed**: a transient failure is logged once per upstream and
  cause (``connection error``, ``timeout``, ``HTTP 503``...), not once per retry; the rest
  go to the debug log. ``harness run -q`` silences them (logger ``harness.retries``).
"""

from __future__ import annotations

import logging
import weakref
from dataclasses import dataclass, field

retry_log = logging.getLogger("harness.retries")


@dataclass
class _Upstream:
    down: str | None = None
    """Why the run stopped because of this upstream (None while it is considered up)."""
    printed: set[str] = field(default_factory=set)


_STATE: weakref.WeakKeyDictionary[object, dict[str, _Upstream]] = weakref.WeakKeyDictionary()


def loop_token() -> object:
    """The running event loop (asyncio) or trio token: per-loop state is keyed by it."""
    try:
        import asyncio

        return asyncio.get_running_loop()
    except RuntimeError:  # trio
        import trio

        return trio.lowlevel.current_trio_token()


def _upstream(base_url: str) -> _Upstream:
    table = _STATE.setdefault(loop_token(), {})
    return table.setdefault(base_url.rstrip("/"), _Upstream())


def mark_down(base_url: str, why: str) -> None:
    """The run stops because of ``base_url``: later requests to it fail at once."""
    _upstream(base_url).down = why


def down_reason(base_url: str) -> str | None:
    """Why requests to ``base_url`` must not be sent any more, or None."""
    return _upstream(base_url).down


def note_retry(base_url: str, cause: str, message: str) -> None:
    """Log a transient failure: the first of its (upstream, cause) as a warning, the rest
    at debug level."""
    seen = _upstream(base_url).printed
    if cause in seen:
        retry_log.debug("%s", message)
        return
    seen.add(cause)
    retry_log.warning(
        "%s (retrying; further '%s' retries of this endpoint are not shown)", message, cause
    )


__all__ = ["down_reason", "mark_down", "note_retry", "retry_log"]
