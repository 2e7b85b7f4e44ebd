"""Rates, means and latency quantiles over a recent window, from snapshots of cumulative metrics.

Algorithm: each snapshot holds, per pool, cumulative counter values, cumulative counts per
(cause, priority) of refusals, and the cumulative buckets of histograms, stamped with the
time it was read. A rate is the difference between the newest snapshot and the oldest one
at most ``over_s`` old, divided by their time apart. A quantile comes from the bucket
differences over the same span, interpolated linearly inside the bucket that holds it
(Prometheus' ``histogram_quantile``); a mean is the difference of a histogram's sum over the
difference of its count. Both are None when nothing was observed in the span. Snapshots
older than ``max_age_s`` are dropped.

Parameters: ``max_age_s``; ``over_s`` per question.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

Buckets = tuple[tuple[float, float], ...]  # (upper bound, cumulative count), ascending
Part = tuple[str, str]  # (cause, priority) of a refusal: deadline | saturated | hard_cap


@dataclass(frozen=True, slots=True)
class Snapshot:
    at: float
    # counter -> pool -> cumulative value
    counters: Mapping[str, Mapping[str, float]]
    # histogram -> pool -> cumulative buckets
    histograms: Mapping[str, Mapping[str, Buckets]] = field(default_factory=dict)
    # gauge -> pool -> value when read
    gauges: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    # pool -> (cause, priority) -> cumulative refusals
    shed: Mapping[str, Mapping[Part, float]] = field(default_factory=dict)

    def pools(self) -> set[str]:
        tables = (*self.counters.values(), *self.histograms.values(), *self.gauges.values())
        return {pool for table in tables for pool in table} | set(self.shed)


class Window:
    def __init__(self, max_age_s: float = 120.0) -> None:
        self._max_age_s = max_age_s
        self._snaps: deque[Snapshot] = deque()

    @property
    def newest(self) -> Snapshot | None:
        return self._snaps[-1] if self._snaps else None

    def add(self, snap: Snapshot) -> None:
        self._snaps.append(snap)
        while self._snaps and snap.at - self._snaps[0].at > self._max_age_s:
            self._snaps.popleft()

    def plus(self, snap: Snapshot) -> Window:
        """A copy of this window with ``snap`` added as its newest reading (this one is left
        as it was); a reading no newer than the newest adds nothing."""
        copy = Window(self._max_age_s)
        copy._snaps = deque(self._snaps)
        if not self._snaps or snap.at > self._snaps[-1].at:
            copy.add(snap)
        return copy

    def rate(self, counter: str, pool: str, over_s: float) -> float | None:
        span = self._span(over_s)
        if span is None:
            return None
        old, new = span
        before = old.counters.get(counter, {}).get(pool, 0.0)
        after = new.counters.get(counter, {}).get(pool, 0.0)
        return max(0.0, after - before) / (new.at - old.at)

    def shed_rates(self, pool: str, over_s: float) -> dict[Part, float] | None:
        """Refusals per second by (cause, priority); parts with none in the span left out."""
        span = self._span(over_s)
        if span is None:
            return None
        old, new = span
        before = old.shed.get(pool, {})
        rates = {
            part: (count - before.get(part, 0.0)) / (new.at - old.at)
            for part, count in new.shed.get(pool, {}).items()
        }
        return {part: rate for part, rate in rates.items() if rate > 0}

    def quantile(self, pool: str, q: float, over_s: float, histogram: str = "ttft") -> float | None:
        span = self._span(over_s)
        if span is None:
            return None
        old, new = span
        recent = _minus(_buckets(new, histogram, pool), _buckets(old, histogram, pool))
        return bucket_quantile(q, recent)

    def mean(self, histogram: str, total: str, pool: str, over_s: float) -> float | None:
        """Mean observation of ``histogram`` whose running sum is the counter ``total``."""
        span = self._span(over_s)
        if span is None:
            return None
        old, new = span
        count = _count(new, histogram, pool) - _count(old, histogram, pool)
        if count <= 0:
            return None
        before = old.counters.get(total, {}).get(pool, 0.0)
        return (new.counters.get(total, {}).get(pool, 0.0) - before) / count

    def _span(self, over_s: float) -> tuple[Snapshot, Snapshot] | None:
        if len(self._snaps) < 2:
            return None
        new = self._snaps[-1]
        old = next((s for s in self._snaps if new.at - s.at <= over_s), new)
        if old is new:
            old = self._snaps[-2]  # polled less often than over_s: use the last interval
        return old, new


def _buckets(snap: Snapshot, histogram: str, pool: str) -> Buckets:
    return snap.histograms.get(histogram, {}).get(pool, ())


def _count(snap: Snapshot, histogram: str, pool: str) -> float:
    buckets = _buckets(snap, histogram, pool)
    return buckets[-1][1] if buckets else 0.0


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
