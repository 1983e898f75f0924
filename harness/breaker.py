"""A circuit breaker for infrastructure: when most recent attempts crashed (the Docker
daemon is down, the model API is out), stop starting new attempts and probe with one at a
time until one succeeds, instead of burning every trial's attempts in a few seconds."""

from __future__ import annotations

import time
from collections import deque

import anyio


class CircuitBreaker:
    def __init__(
        self,
        window: int = 20,
        threshold: float = 0.8,
        min_calls: int = 8,
        cooldown_s: float = 1.0,
        max_cooldown_s: float = 30.0,
    ):
        self.window: deque[bool] = deque(maxlen=window)
        self.threshold, self.min_calls = threshold, min_calls
        self.base_cooldown, self.max_cooldown = cooldown_s, max_cooldown_s
        self.cooldown = cooldown_s
        self.open_until = 0.0
        self.probe = anyio.Lock()
        self.opened = 0
        """How many times the breaker opened (reported with the run)."""

    @property
    def is_open(self) -> bool:
        w = self.window
        return len(w) >= self.min_calls and w.count(False) / len(w) >= self.threshold

    async def before_attempt(self) -> bool:
        """Wait while the breaker is open. Returns True when this attempt is a probe."""
        if not self.is_open:
            return False
        await self.probe.acquire()
        # Re-check: another probe may have closed it while we waited.
        if not self.is_open:
            self.probe.release()
            return False
        delay = self.open_until - time.monotonic()
        if delay > 0:
            await anyio.sleep(delay)
        return True

    def after_attempt(self, ok: bool, probe: bool) -> None:
        """Record an attempt's outcome: ok=False only for infrastructure errors."""
        was_open = self.is_open
        self.window.append(ok)
        if ok and probe:
            self.window.clear()
            self.cooldown = self.base_cooldown
        elif not ok and (probe or (self.is_open and not was_open)):
            if not was_open:
                self.opened += 1
            self.open_until = time.monotonic() + self.cooldown
            self.cooldown = min(self.max_cooldown, self.cooldown * 2)
        if probe:
            self.probe.release()
