"""Windowed rates and histogram quantiles from cumulative snapshots, by tables."""

from __future__ import annotations

import math

import pytest

from gateway.dashboard.window import Snapshot, Window, bucket_quantile

INF = math.inf

# id -> (q, cumulative buckets, expected)
QUANTILES = {
    "empty": (0.5, (), None),
    "no observations": (0.5, ((0.1, 0.0), (INF, 0.0)), None),
    "middle of the first bucket": (0.5, ((0.1, 10.0), (INF, 10.0)), 0.05),
    "second bucket, interpolated": (0.5, ((0.1, 2.0), (0.3, 6.0), (INF, 6.0)), 0.15),
    "p99 at the top of a bucket": (0.99, ((0.1, 0.0), (1.0, 100.0), (INF, 100.0)), 0.991),
    "beyond the last finite bound": (0.99, ((0.1, 1.0), (INF, 10.0)), 0.1),
}


@pytest.mark.parametrize(("q", "buckets", "want"), QUANTILES.values(), ids=QUANTILES)
def test_bucket_quantile(q: float, buckets: tuple[tuple[float, float], ...], want: float) -> None:
    got = bucket_quantile(q, buckets)
    assert got == (None if want is None else pytest.approx(want))


def snap(at: float, admitted: float, ttft: tuple[tuple[float, float], ...] = ()) -> Snapshot:
    return Snapshot(at, {"admitted": {"p": admitted}}, {"ttft": {"p": ttft}})


def test_rate_over_the_window() -> None:
    window = Window(max_age_s=100)
    assert window.rate("admitted", "p", 10) is None  # one snapshot is not a rate
    for at, count in ((0, 0), (5, 10), (10, 30), (15, 60)):
        window.add(snap(at, count))
    assert window.rate("admitted", "p", 10) == pytest.approx((60 - 10) / 10)
    assert window.rate("admitted", "p", 100) == pytest.approx(60 / 15)
    assert window.rate("missing", "p", 10) == 0.0


def test_sparse_polls_use_the_last_interval() -> None:
    window = Window(max_age_s=100)
    window.add(snap(0, 0))
    window.add(snap(30, 60))
    assert window.rate("admitted", "p", 10) == pytest.approx(2.0)


def test_quantile_counts_only_the_window() -> None:
    window = Window(max_age_s=100)
    window.add(snap(0, 0, ((0.1, 100.0), (1.0, 100.0), (INF, 100.0))))  # old: all fast
    window.add(snap(10, 0, ((0.1, 100.0), (1.0, 110.0), (INF, 110.0))))  # new: ten slow
    assert window.quantile("p", 0.5, 60) == pytest.approx(0.55)


def test_old_snapshots_are_dropped() -> None:
    window = Window(max_age_s=10)
    window.add(snap(0, 1000))
    window.add(snap(5, 1000))
    window.add(snap(12, 1004))
    window.add(snap(20, 1010))  # 0 and 5 are now older than 10 s
    assert window.rate("admitted", "p", 100) == pytest.approx(6 / 8)


def test_shed_rates_by_reason_and_priority() -> None:
    window = Window(max_age_s=100)
    full, late = ("queue_full", "sheddable"), ("predicted_late", "standard")
    window.add(Snapshot(0, {}, shed={"p": {full: 10.0}}))
    assert window.shed_rates("p", 10) is None
    window.add(Snapshot(5, {}, shed={"p": {full: 30.0, late: 5.0}}))
    window.add(Snapshot(10, {}, shed={"p": {full: 30.0, late: 5.0}, "q": {full: 1.0}}))
    assert window.shed_rates("p", 10) == pytest.approx({full: 2.0, late: 0.5})
    assert window.shed_rates("p", 5) == {}  # nothing refused in the last interval
    assert window.shed_rates("q", 10) == pytest.approx({full: 0.1})


def test_mean_of_a_histogram_over_the_window() -> None:
    window = Window(max_age_s=100)

    def at(t: float, count: float, total: float) -> Snapshot:
        return Snapshot(t, {"sum": {"p": total}}, {"h": {"p": ((5.0, count), (INF, count))}})

    window.add(at(0, 2, 20.0))  # two old observations of 10 s
    window.add(at(10, 2, 20.0))
    assert window.mean("h", "sum", "p", 10) is None  # none in the window
    window.add(at(20, 5, 29.0))  # three new ones, 3 s each
    assert window.mean("h", "sum", "p", 10) == pytest.approx(3.0)
    assert window.mean("h", "sum", "p", 60) == pytest.approx(3.0)
    assert window.mean("h", "sum", "missing", 60) is None
