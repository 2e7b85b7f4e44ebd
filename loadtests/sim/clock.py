"""Simulated-time clocks for the async driver.

Algorithm: simulated time runs ``speed`` times faster than the monotonic clock, so
``now() = (monotonic() - t0) * speed`` and waiting until simulated time ``t`` sleeps
``(t - now()) / speed`` real seconds. Tests can substitute any object with the same two
methods.

Parameters: ``speed`` (> 0).
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Simulated seconds since an arbitrary origin."""
        ...

    async def sleep_until(self, t: float) -> None:
        """Return once simulated time reaches ``t`` (at least yield to the loop)."""
        ...


class RealClock:
    """Monotonic real time scaled by ``speed``."""

    def __init__(self, speed: float = 1.0) -> None:
        if speed <= 0:
            raise ValueError("speed must be positive")
        self.speed = speed
        self._t0 = time.monotonic()

    def now(self) -> float:
        return (time.monotonic() - self._t0) * self.speed

    async def sleep_until(self, t: float) -> None:
        # Always suspend, even when late, so a busy engine never starves the HTTP servers.
        await asyncio.sleep(max(0.0, (t - self.now()) / self.speed))
