"""A circuit breaker for infrastructure: when most recent attempts crashed (the Docker
daemon is down, the model API is out), stop starting attempts and probe the infrastructure
with a cheap health check until it answers, instead of burning every trial's attempts.

Probing uses the sandbox provider's ``healthy()`` when it has one (Docker: a ping); without
one, the next attempt itself is the probe.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable

import anyio

HealthCheck = Callable[[], Awaitable[bool]]


class CircuitBreaker:
    def __init__(
        self,
        window: int = 20,
        threshold: float = 0.8,
        min_calls: int = 5,
        cooldown_s: float = 1.0,
        max_cooldown_s: float = 30.0,
        health: HealthCheck | None = None,
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

    @property
    def is_open(self) -> bool:
        w = self.window
        return len(w) >= self.min_calls and w.count(False) / len(w) >= self.threshold

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

    def after_attempt(self, ok: bool) -> None:
        """Record an attempt's outcome: ``ok=False`` only for infrastructure errors."""
        self.window.append(ok)
