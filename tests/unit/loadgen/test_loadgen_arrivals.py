from __future__ import annotations

import random

import pytest

from loadtests.loadgen.arrivals import Bounds, OnOff, Poisson, mean_gap, schedule


def test_poisson_mean_rate_within_tolerance() -> None:
    offsets = schedule(Poisson(rate=10.0), random.Random(1), Bounds(duration_s=200.0))
    assert len(offsets) == pytest.approx(2000, rel=0.05)
    assert 1 / mean_gap(offsets) == pytest.approx(10.0, rel=0.05)
    assert offsets == sorted(offsets)
    assert offsets[-1] < 200.0


def test_max_requests_bound_stops_first() -> None:
    offsets = schedule(Poisson(rate=10.0), random.Random(1), Bounds(max_requests=7))
    assert len(offsets) == 7


def test_bounds_require_one_limit() -> None:
    with pytest.raises(ValueError, match="duration_s"):
        Bounds()


def test_same_seed_same_arrivals() -> None:
    a = schedule(Poisson(rate=3.0), random.Random(5), Bounds(duration_s=30))
    b = schedule(Poisson(rate=3.0), random.Random(5), Bounds(duration_s=30))
    assert a == b


def test_onoff_shape() -> None:
    spec = OnOff(rate_on=50.0, rate_off=0.0, on_s=2.0, off_s=3.0)
    offsets = schedule(spec, random.Random(2), Bounds(duration_s=50.0))
    in_off_phase = [t for t in offsets if t % 5.0 >= 2.0]
    assert in_off_phase == []
    assert len(offsets) == pytest.approx(50.0 * 2.0 * 10, rel=0.1)
    per_burst = [sum(1 for t in offsets if k * 5 <= t < k * 5 + 2) for k in range(10)]
    assert min(per_burst) > 60


def test_onoff_background_rate_and_rescale() -> None:
    spec = OnOff(rate_on=20.0, rate_off=2.0, on_s=5.0, off_s=5.0)
    assert spec.mean_rate() == pytest.approx(11.0)
    scaled = spec.with_rate(22.0)
    assert (scaled.rate_on, scaled.rate_off) == pytest.approx((40.0, 4.0))
    offsets = schedule(spec, random.Random(3), Bounds(duration_s=200.0))
    off = sum(1 for t in offsets if t % 10.0 >= 5.0)
    assert off == pytest.approx(2.0 * 100, rel=0.2)
