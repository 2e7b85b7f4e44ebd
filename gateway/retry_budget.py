"""Retry budget: retries may be at most a share of recent requests, so they cannot feed an overload.

Like Finagle's ``RetryBudget`` and Envoy's retry budget. Per-request retry limits are not
enough: when every backend is slow, each request retrying once doubles the load exactly when
there is least capacity. A budget caps retries across all requests instead.

Algorithm: a sliding window of ``window_s`` seconds is kept as ``BUCKETS`` time buckets of
``window_s / BUCKETS`` seconds, each counting first attempts (``on_request``) and granted
retries (``try_spend``). Memory is constant; a bucket is zeroed when the clock moves past it.
The window at time ``t`` is the current bucket plus the ``BUCKETS - 1`` before it, so it spans
between ``(BUCKETS - 1) / BUCKETS * window_s`` and ``window_s`` seconds. A retry is granted when

    retries_in_window + 1 <= ratio * requests_in_window + min_retries_per_s * window_s

Parameters (``RetryBudgetSettings``)
    ``ratio``              retries may be at most this share of the requests in the window,
                           in [0, 1] (0: only the floor).
    ``window_s``           length of the sliding window, seconds (> 0).
    ``min_retries_per_s``  floor: ``min_retries_per_s * window_s`` retries per window are always
                           allowed whatever the traffic, so a quiet service can still retry
                           (>= 0; 0 disables the floor).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

BUCKETS = 10
# Absorbs float error in ``ratio * requests`` (0.29 * 100 == 28.999999999999996).
_EPSILON = 1e-9


@dataclass(frozen=True, slots=True)
class RetryBudgetSettings:
    ratio: float = 0.1
    window_s: float = 10.0
    min_retries_per_s: float = 0.5

    def __post_init__(self) -> None:
        if not 0.0 <= self.ratio <= 1.0:  # also rejects NaN
            raise ValueError(f"ratio must be in [0, 1], got {self.ratio}")
        if not (math.isfinite(self.window_s) and self.window_s > 0.0):
            raise ValueError(f"window_s must be a positive number, got {self.window_s}")
        if not (math.isfinite(self.min_retries_per_s) and self.min_retries_per_s >= 0.0):
            raise ValueError(f"min_retries_per_s must be >= 0, got {self.min_retries_per_s}")


class RetryBudget:
    """A retry budget shared by all requests of one scope (e.g. one pool). Not thread-safe."""

    __slots__ = (
        "_bucket_s",
        "_clock",
        "_floor",
        "_head",
        "_requests",
        "_retries",
        "_settings",
        "_total_requests",
        "_total_retries",
    )

    def __init__(self, settings: RetryBudgetSettings, clock: Callable[[], float]) -> None:
        self._settings = settings
        self._clock = clock
        self._bucket_s = settings.window_s / BUCKETS
        self._floor = settings.min_retries_per_s * settings.window_s
        self._requests = [0] * BUCKETS
        self._retries = [0] * BUCKETS
        self._total_requests = 0
        self._total_retries = 0
        self._head = self._index()  # absolute number of the current bucket

    @property
    def settings(self) -> RetryBudgetSettings:
        return self._settings

    def on_request(self) -> None:
        """Count a first attempt."""
        slot = self._advance()
        self._requests[slot] += 1
        self._total_requests += 1

    def try_spend(self) -> bool:
        """Record a retry and return ``True`` if the budget allows one now, else ``False``."""
        slot = self._advance()
        allowance = self._settings.ratio * self._total_requests + self._floor
        if self._total_retries + 1 > allowance + _EPSILON:
            return False
        self._retries[slot] += 1
        self._total_retries += 1
        return True

    def stats(self) -> tuple[int, int]:
        """``(requests, retries)`` in the current window."""
        self._advance()
        return self._total_requests, self._total_retries

    def _index(self) -> int:
        return math.floor(self._clock() / self._bucket_s)

    def _advance(self) -> int:
        """Zero the buckets the clock has moved past; return the current bucket's slot."""
        now = self._index()
        if now > self._head:
            if now - self._head >= BUCKETS:
                self._requests = [0] * BUCKETS
                self._retries = [0] * BUCKETS
                self._total_requests = 0
                self._total_retries = 0
            else:
                for index in range(self._head + 1, now + 1):
                    slot = index % BUCKETS
                    self._total_requests -= self._requests[slot]
                    self._total_retries -= self._retries[slot]
                    self._requests[slot] = 0
                    self._retries[slot] = 0
            self._head = now
        # A clock that steps back keeps counting into the current bucket.
        return self._head % BUCKETS
