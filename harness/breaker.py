"""A circuit breaker for infrastructure, in two parts.

**Pause.** When most recent attempts crashed (the Docker daemon is down), stop starting
attempts and probe the infrastructure with a cheap health check until it answers, instead of
burning every trial's attempts. Probing uses the sandbox provider's ``healthy()`` when it has
one (Docker: a ping); without one, the next attempt itself is the probe.

**Stop, per model upstream.** Attempts that end with ``ModelUnavailable`` are counted per
endpoint and cause (``connection error``, ``timeout``, ``HTTP 503``...); an attempt of the
same arm that ends well resets its endpoints' counts. After ``stop_after`` consecutive
failures of one cause (at once when the upstream refused the harness's key) the breaker
trips: the endpoint is marked down for the process (``harness.models.upstreams``: requests
in flight to it fail at once), trials in flight that then fail stay unfinished, no new trial
starts, and the run ends resumable with ``UpstreamDown`` as its cause (exit 5 for a refused
key, else 3). One outage stops a run in seconds instead of spending every trial's attempts.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable

import anyio

from harness.errors import HarnessError, ModelUnavailable

HealthCheck = Callable[[], Awaitable[bool]]

STOP_AFTER = 3
"""Consecutive failures of one model endpoint, with one cause, that stop the run."""


class UpstreamDown(HarnessError):
    """The run stopped because one model endpoint kept failing the same way (or refused the
    harness's key). The trials it did not finish stay unfinished: ``--resume`` runs them."""

    def __init__(
        self, arm: str, endpoint: str, cause: str, failures: int, config: str | None, last: str
    ):
        self.arm, self.endpoint, self.cause = arm, endpoint, cause
        self.failures, self.config_what, self.last = failures, config, last
        what = (
            f"{config} ({cause})" if config else f"failed {failures} attempt(s) in a row ({cause})"
        )
        super().__init__(f"arm '{arm}': model endpoint {endpoint} {what}; last: {last[:300]}")

    @property
    def config(self) -> bool:
        """The suite's configuration is at fault (exit 5), not an outage (exit 3)."""
        return self.config_what is not None

    def __reduce__(self) -> tuple[type[UpstreamDown], tuple[str, str, str, int, str | None, str]]:
        """Picklable (a Ray worker's breaker hands it to the driver)."""
        args = (self.arm, self.endpoint, self.cause, self.failures, self.config_what, self.last)
        return type(self), args


class CircuitBreaker:
    def __init__(
        self,
        window: int = 20,
        threshold: float = 0.8,
        min_calls: int = 5,
        cooldown_s: float = 1.0,
        max_cooldown_s: float = 30.0,
        health: HealthCheck | None = None,
        stop_after: int = STOP_AFTER,
    ):
        self.window: deque[bool] = deque(maxlen=window)
        self.threshold, self.min_calls = threshold, min_calls
        self.base_cooldown, self.max_cooldown = cooldown_s, max_cooldown_s
        self.health = health
        self.opened = 0
        """How many times the breaker opened (reported with the run)."""
        self.paused_s = 0.0
        """Total time new attempts were held back."""
        self._recovering: anyio.Event | None = None
        self.stop_after = stop_after
        self.tripped: UpstreamDown | None = None
        """Set once a model endpoint stopped the run (never cleared within the run)."""
        self._streaks: dict[str, tuple[str, int]] = {}
        """Endpoint -> (cause, consecutive failed attempts with it)."""
        self._arm_endpoints: dict[str, set[str]] = {}
        """Arm -> the endpoints its failed attempts named (an ok attempt resets them)."""

    @property
    def is_open(self) -> bool:
        """Most recent attempts crashed (``threshold`` of the window), or the last
        ``min_calls`` did in a row: the infrastructure just went down, however many
        attempts had gone well before (with few trials in flight, the window alone opened
        only after each trial had spent most of its attempts on the outage)."""
        w = self.window
        if len(w) >= self.min_calls and w.count(False) / len(w) >= self.threshold:
            return True
        recent = list(w)[-self.min_calls :]
        return len(recent) == self.min_calls and not any(recent)

    async def before_attempt(self) -> None:
        """Wait while the breaker is open: one task probes, the others wait for its result."""
        if not self.is_open:
            return
        if self._recovering is not None:
            await self._recovering.wait()
            return
        self._recovering = anyio.Event()
        self.opened += 1
        start = anyio.current_time()
        cooldown = self.base_cooldown
        try:
            while True:
                await anyio.sleep(cooldown)
                if self.health is None or await self._healthy():
                    break
                cooldown = min(self.max_cooldown, cooldown * 2)
        finally:
            self.window.clear()
            self.paused_s += anyio.current_time() - start
            self._recovering.set()
            self._recovering = None

    async def _healthy(self) -> bool:
        if self.health is None:
            return True
        try:
            return bool(await self.health())
        except Exception:
            return False

    def after_attempt(
        self, ok: bool, exc: BaseException | None = None, arm: str | None = None
    ) -> None:
        """Record an attempt's outcome: ``ok=False`` only for infrastructure errors, with
        the error and the attempt's arm (model endpoints are counted per cause)."""
        self.window.append(ok)
        if ok:
            for endpoint in self._arm_endpoints.get(arm or "", ()):
                self._streaks.pop(endpoint, None)
            return
        if not isinstance(exc, ModelUnavailable) or exc.endpoint is None:
            return
        endpoint, cause = exc.endpoint, exc.cause or "unknown"
        self._arm_endpoints.setdefault(arm or "", set()).add(endpoint)
        last_cause, count = self._streaks.get(endpoint, (cause, 0))
        count = count + 1 if last_cause == cause else 1
        self._streaks[endpoint] = (cause, count)
        if self.tripped is None and (exc.config or count >= self.stop_after):
            from harness.models.upstreams import mark_down

            config = exc.what if exc.config else None
            self.tripped = UpstreamDown(arm or "?", endpoint, cause, count, config, str(exc))
            mark_down(endpoint, f"{cause}, {count} attempt(s) in a row")
