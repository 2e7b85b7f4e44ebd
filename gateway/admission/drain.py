"""Measured drain rate of a pool: how much work per second leaves it, and so how long a wait is.

Algorithm: an exponentially decayed sum of completed work,

    S(t) = sum_i cost_i * exp(-lambda * (t - t_i)),     lambda = ln 2 / half_life_s,

turned into a rate by the kernel's normalisation: a steady drain of ``r`` work per second
gives ``S -> r / lambda``, so ``rate = lambda * S``. Before the kernel has seen a whole history
the sum is short by the factor ``1 - exp(-lambda * (t - t0))``, where ``t0`` is when the
``DrainRate`` was created; ``rate`` divides by it (the bias correction Adam uses for its
moments), so the estimate is right from the first completion instead of creeping up over
several half-lives. The observed time ``t - t0`` counts as at least ``min_window_s``: a
completion an instant after creation (a policy reload while requests were in flight) would
otherwise read as an almost infinite rate. A completion weighs half as much ``half_life_s``
later.

When nothing completes the rate decays towards 0: a pool that stopped draining reports ever
longer waits. ``rate`` is 0.0 until any work has completed, and ``estimated_wait`` is then
``None`` (unknown) unless there is no work ahead at all (0.0).

The clock is injected and read on every call; a clock that steps back counts as no time
passing.

Parameters
    ``half_life_s``  how quickly old completions stop counting, seconds (> 0).
    ``min_window_s`` shortest observation the first estimates are based on, seconds (> 0).
    ``clock``        monotonic seconds, e.g. ``time.monotonic``.
"""

from __future__ import annotations

import math
from collections.abc import Callable


class DrainRate:
    """Exponentially decayed work-per-second of one pool. Not thread-safe."""

    __slots__ = ("_clock", "_decay", "_last", "_min_window_s", "_start", "_sum")

    def __init__(
        self,
        *,
        half_life_s: float = 5.0,
        clock: Callable[[], float],
        min_window_s: float = 1.0,
    ) -> None:
        if not (math.isfinite(half_life_s) and half_life_s > 0.0):
            raise ValueError(f"half_life_s must be a positive number, got {half_life_s}")
        if not (math.isfinite(min_window_s) and min_window_s > 0.0):
            raise ValueError(f"min_window_s must be a positive number, got {min_window_s}")
        self._min_window_s = min_window_s
        self._decay = math.log(2.0) / half_life_s  # lambda
        self._clock = clock
        self._start = clock()
        self._last = self._start
        self._sum = 0.0

    def on_complete(self, cost: float) -> None:
        """A request left the pool, having done ``cost`` work (e.g. tokens)."""
        if not (math.isfinite(cost) and cost >= 0.0):
            raise ValueError(f"cost must be a finite number >= 0, got {cost}")
        now = self._clock()
        self._sum = self._decayed(now) + cost
        self._last = max(self._last, now)

    def rate(self) -> float:
        """Work per second, exponentially decayed; 0.0 until anything completed."""
        now = self._clock()
        decayed = self._decayed(now)
        if decayed <= 0.0:
            return 0.0
        observed = max(max(now, self._last) - self._start, self._min_window_s)
        coverage = -math.expm1(-self._decay * observed)  # 1 - exp(-lambda * observed)
        if coverage <= 0.0:  # underflow with an absurdly long half-life: the plain mean
            return decayed / observed
        return self._decay * decayed / coverage

    def estimated_wait(self, work_ahead: float) -> float | None:
        """Seconds until ``work_ahead`` has drained at the current rate; ``None`` if unknown."""
        if work_ahead <= 0.0:
            return 0.0
        rate = self.rate()
        if rate <= 0.0:
            return None
        return work_ahead / rate

    def _decayed(self, now: float) -> float:
        elapsed = now - self._last
        if elapsed <= 0.0:
            return self._sum
        return self._sum * math.exp(-self._decay * elapsed)
