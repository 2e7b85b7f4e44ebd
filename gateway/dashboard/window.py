"""Rates and latency quantiles over a recent window, from snapshots of cumulative metrics.

Algorithm: each snapshot holds, per pool, cumulative counter values and the cumulative
buckets of the TTFT histogram, stamped with the time it was read. A rate is the difference
between the newest snapshot and the oldest one at most ``over_s`` old, divided by their time
apart. A quantile comes from the bucket differences over the same span, interpolated
linearly inside the bucket that holds it (Prometheus' ``histogram_quantile``); it is None
when no request finished in the span. Snapshots older than ``max_age_s`` are dropped.

Parameters: ``max_age_s``; ``over_s`` per question.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

Buckets = tuple[tuple[float, float], ...]  # (upper bound, cumulative count), ascending


@dataclass(frozen=True, slots=True)
class Snapshot:
    at: float
    counters: Mapping[str, Mapping[str, float]]  # counter -> pool -> cumulative value
    ttft: Mapping[str, Buckets]  # pool -> cumulative buckets


class Window:
    def __init__(self, max_age_s: float = 120.0) -> None:
        self._max_age_s = max_age_s
        self._snaps: deque[Snapshot] = deque()

    def add(self, snap: Snapshot) -> None:
        self._snaps.append(snap)
        while self._snaps and snap.at - self._snaps[0].at > self._max_age_s:
            self._snaps.popleft()

    def rate(self, counter: str, pool: str, over_s: float) -> float | None:
        span = self._span(over_s)
        if span is None:
            return None
        old, new = span
        before = old.counters.get(counter, {}).get(pool, 0.0)
        after = new.counters.get(counter, {}).get(pool, 0.0)
        return max(0.0, after - before) / (new.at - old.at)

    def quantile(self, pool: str, q: float, over_s: float) -> float | None:
        span = self._span(over_s)
        if span is None:
            return None
        old, new = span
        return bucket_quantile(q, _minus(new.ttft.get(pool, ()), old.ttft.get(pool, ())))

    def _span(self, over_s: float) -> tuple[Snapshot, Snapshot] | None:
        if len(self._snaps) < 2:
            return None
        new = self._snaps[-1]
        old = next((s for s in self._snaps if new.at - s.at <= over_s), new)
        if old is new:
            old = self._snaps[-2]  # polled less often than over_s: use the last interval
        return old, new


def _minus(new: Buckets, old: Buckets) -> Buckets:
    before = dict(old)
    return tuple((le, count - before.get(le, 0.0)) for le, count in new)


def bucket_quantile(q: float, buckets: Sequence[tuple[float, float]]) -> float | None:
    """The ``q`` quantile of cumulative ``buckets`` (the last one is +Inf)."""
    if not buckets or buckets[-1][1] <= 0:
        return None
    rank = q * buckets[-1][1]
    lower, below = 0.0, 0.0
    for upper, count in buckets:
        if count >= rank:
            if math.isinf(upper):
                return lower  # beyond the last finite bound: all we can say
            inside = count - below
            return lower + (upper - lower) * ((rank - below) / inside if inside else 1.0)
        lower, below = upper, count
    return lower
