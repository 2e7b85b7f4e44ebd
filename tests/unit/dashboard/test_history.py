"""The gateway's 15-minute ring of per-pool points, on an injected clock, by tables."""

from __future__ import annotations

import asyncio
import math

import pytest

from gateway.dashboard.history import History
from gateway.dashboard.window import Snapshot


def reading(at: float) -> Snapshot:
    return Snapshot(at, {"admitted": {"p": at}})


# id -> (interval_s, horizon_s, reading times, times of the points kept)
RING = {
    "the first reading makes no point": (5, 20, [0], []),
    "points in order": (5, 20, [0, 5, 10], [5, 10]),
    "a clock that did not move adds nothing": (5, 20, [0, 5, 5, 4], [5]),
    "wrap-around: the oldest slot is overwritten": (
        5,
        20,
        list(range(0, 55, 5)),
        [30, 35, 40, 45, 50],
    ),
    "after a gap, points older than the horizon go": (5, 20, [0, 5, 10, 100, 105], [100, 105]),
    "exactly the horizon old is kept": (5, 20, [0, 5, 25], [5, 25]),
    "sampled faster than the interval: the capacity still bounds": (
        5,
        20,
        list(range(11)),
        [6, 7, 8, 9, 10],
    ),
}


@pytest.mark.parametrize(("interval", "horizon", "times", "kept"), RING.values(), ids=RING)
def test_ring(interval: float, horizon: float, times: list[float], kept: list[float]) -> None:
    history = History(interval_s=interval, horizon_s=horizon)
    assert history.capacity == horizon / interval + 1
    for at in times:
        history.sample(reading(at))
    assert [p.at for p in history.points()] == kept


def test_fifteen_minutes_by_default() -> None:
    history = History()
    assert (history.interval_s, history.horizon_s, history.capacity) == (5.0, 900.0, 181)
    for i in range(20 * 12 + 1):  # twenty minutes, every 5 s
        history.sample(reading(1000.0 + 5 * i))
    points = history.points()
    assert len(points) == 181
    assert (points[0].at, points[-1].at) == (2200.0 - 900, 2200.0)


@pytest.mark.parametrize(
    ("since", "want"),
    [(None, [5, 10, 15]), (5.0, [10, 15]), (7.5, [10, 15]), (15.0, []), (-math.inf, [5, 10, 15])],
)
def test_points_since(since: float | None, want: list[float]) -> None:
    history = History(interval_s=5, horizon_s=60)
    for at in (0, 5, 10, 15):
        history.sample(reading(at))
    assert [p.at for p in history.points(since)] == want


@pytest.mark.parametrize(("interval", "horizon"), [(0, 10), (-1, 10), (10, 5)])
def test_bad_settings_are_refused(interval: float, horizon: float) -> None:
    with pytest.raises(ValueError, match="interval_s"):
        History(interval_s=interval, horizon_s=horizon)


class Stop(Exception):
    pass


def test_run_samples_on_the_injected_clock_every_interval() -> None:
    now = [100.0]
    naps: list[float] = []

    async def sleep(seconds: float) -> None:
        naps.append(seconds)
        if len(naps) == 4:
            raise Stop
        now[0] += seconds

    history = History(interval_s=5, horizon_s=60)
    with pytest.raises(Stop):
        asyncio.run(history.run(lambda: reading(now[0]), sleep))
    assert naps == [5, 5, 5, 5]
    assert [p.at for p in history.points()] == [105, 110, 115]
