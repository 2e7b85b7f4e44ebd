"""The last minutes of each pool's load-shedding figures, kept by the gateway in a ring.

Algorithm: every ``interval_s`` (on the gateway's clock, by a task of the app's lifespan) a
snapshot of the cumulative metrics is added to a short window; from that window one point
per pool is derived: admissions and refusals per second (refusals by (cause, priority))
over the last ``rate_s``; p50 and p99 of the predicted and of the observed TTFT, the p90 of
the prediction's error and the mean and p99 of the Retry-After advised, over the requests
of the last ``quantile_s`` (None when there were none); the TTFT objective and the queue
depth as read; after dispatch, over the last ``rate_s``: hedges per second by event (sent,
won, cancelled), failovers before the first token by reason (stall, error, taken_back),
continuations by result (ok, failed, impossible), and the extra load share, (hedges sent +
failovers) / admitted (the upstream requests recovery added per request the pool took; None
when none was admitted). The point goes into a ring of ``capacity = horizon_s / interval_s
+ 1`` slots (the oldest is overwritten), and points more than ``horizon_s`` older than the
newest are dropped, so memory is bounded however often or seldom the sampler runs. A
snapshot no newer than the previous one adds nothing (a clock that did not move).

``current(snapshot)`` is the point as of that reading, over the same windows, without
keeping it: the dashboard's table shows it and its charts end on it, so table and charts
read the same figures at the same moment.

Parameters: ``interval_s`` (5 s), ``horizon_s`` (15 min), ``rate_s`` (10 s), ``quantile_s``
(30 s).
"""

from __future__ import annotations

import asyncio
import inspect
import math
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from gateway.dashboard.window import Part, Snapshot, Window

INTERVAL_S = 5.0
HORIZON_S = 900.0
RATE_S = 10.0
QUANTILE_S = 30.0


@dataclass(frozen=True, slots=True)
class PoolPoint:
    objective_s: float | None
    predicted_p50_s: float | None
    predicted_p99_s: float | None
    observed_p50_s: float | None
    observed_p99_s: float | None
    shed_per_s: Mapping[Part, float]  # parts with no refusal left out
    queue_depth: float
    retry_after_mean_s: float | None
    retry_after_p99_s: float | None
    admitted_per_s: float | None = None
    prediction_error_p90_s: float | None = None
    # after dispatch, per second by event / reason / result (values with none left out)
    hedges_per_s: Mapping[str, float] = field(default_factory=dict)
    failovers_per_s: Mapping[str, float] = field(default_factory=dict)
    continuations_per_s: Mapping[str, float] = field(default_factory=dict)
    extra_share: float | None = None  # (hedges sent + failovers) / admitted


@dataclass(frozen=True, slots=True)
class Point:
    at: float
    pools: Mapping[str, PoolPoint]


class History:
    def __init__(
        self,
        *,
        interval_s: float = INTERVAL_S,
        horizon_s: float = HORIZON_S,
        rate_s: float = RATE_S,
        quantile_s: float = QUANTILE_S,
    ) -> None:
        if interval_s <= 0 or horizon_s < interval_s:
            raise ValueError("need 0 < interval_s <= horizon_s")
        self.interval_s = interval_s
        self.horizon_s = horizon_s
        self._rate_s = rate_s
        self._quantile_s = quantile_s
        self._recent = Window(max_age_s=max(rate_s, quantile_s) + interval_s)
        self._points: deque[Point] = deque(maxlen=self.capacity)

    @property
    def capacity(self) -> int:
        return math.ceil(self.horizon_s / self.interval_s) + 1

    def sample(self, snap: Snapshot) -> Point | None:
        """Add a reading; the point it makes, or None (the first reading, or no time passed)."""
        newest = self._recent.newest
        if newest is not None and snap.at <= newest.at:
            return None
        self._recent.add(snap)
        if newest is None:
            return None  # a rate needs two readings
        point = self._point(self._recent, snap)
        self._points.append(point)
        while self._points[0].at < point.at - self.horizon_s:
            self._points.popleft()
        return point

    def current(self, snap: Snapshot) -> Point | None:
        """The point as of ``snap``, over the same windows as the kept ones, not kept; None
        before any reading was kept (a rate needs two)."""
        if self._recent.newest is None:
            return None
        return self._point(self._recent.plus(snap), snap)

    def points(self, since: float | None = None) -> list[Point]:
        """The points kept, oldest first; with ``since``, only those after it."""
        return [p for p in self._points if since is None or p.at > since]

    async def run(
        self,
        read: Callable[[], Snapshot | Awaitable[Snapshot]],
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        """Sample ``read()`` (a snapshot, or one to await: the host's workers' together)
        every ``interval_s`` until cancelled."""
        while True:
            snap = read()
            self.sample(await snap if inspect.isawaitable(snap) else snap)
            await sleep(self.interval_s)

    def _point(self, window: Window, snap: Snapshot) -> Point:
        pools = sorted(snap.pools())
        return Point(snap.at, {pool: self._pool(window, snap, pool) for pool in pools})

    def _pool(self, window: Window, snap: Snapshot, pool: str) -> PoolPoint:
        over, rate_s = self._quantile_s, self._rate_s
        admitted = window.rate("admitted", pool, rate_s)
        hedges = _by_label(window, snap, "hedges", pool, rate_s)
        failovers = _by_label(window, snap, "failovers", pool, rate_s)
        extra = hedges.get("sent", 0.0) + sum(failovers.values())
        return PoolPoint(
            objective_s=snap.gauges.get("objective", {}).get(pool),
            predicted_p50_s=window.quantile(pool, 0.5, over, "predicted"),
            predicted_p99_s=window.quantile(pool, 0.99, over, "predicted"),
            observed_p50_s=window.quantile(pool, 0.5, over, "ttft"),
            observed_p99_s=window.quantile(pool, 0.99, over, "ttft"),
            shed_per_s=window.shed_rates(pool, self._rate_s) or {},
            queue_depth=snap.gauges.get("queue_depth", {}).get(pool, 0.0),
            retry_after_mean_s=window.mean("retry_after", "retry_after_sum", pool, over),
            retry_after_p99_s=window.quantile(pool, 0.99, over, "retry_after"),
            admitted_per_s=admitted,
            prediction_error_p90_s=window.quantile(pool, 0.9, over, "prediction_error"),
            hedges_per_s=hedges,
            failovers_per_s=failovers,
            continuations_per_s=_by_label(window, snap, "continuations", pool, rate_s),
            extra_share=extra / admitted if admitted else None,
        )


def _by_label(
    window: Window, snap: Snapshot, key: str, pool: str, over_s: float
) -> dict[str, float]:
    """Per second over ``over_s``, of each counter ``<key>:<value>`` (``dashboard/snapshot.
    py``), by value; values with none in the span left out."""
    prefix = f"{key}:"
    rates = {
        name.removeprefix(prefix): window.rate(name, pool, over_s)
        for name, table in snap.counters.items()
        if name.startswith(prefix) and pool in table
    }
    return {value: rate for value, rate in sorted(rates.items()) if rate}
