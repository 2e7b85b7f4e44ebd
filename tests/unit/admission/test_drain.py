"""DrainRate: an injected clock drives completions; rates, half-lives and waits are checked."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.admission.drain import DrainRate


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def make(half_life_s: float = 5.0, **kwargs: float) -> tuple[DrainRate, FakeClock]:
    clock = FakeClock()
    return DrainRate(half_life_s=half_life_s, clock=clock, **kwargs), clock


def steady(
    drain: DrainRate, clock: FakeClock, *, cost: float, every_s: float, for_s: float
) -> None:
    for _ in range(round(for_s / every_s)):
        clock.now += every_s
        drain.on_complete(cost)


def test_unknown_until_anything_completed() -> None:
    drain, clock = make()
    clock.now += 60.0
    assert drain.rate() == 0.0
    assert drain.estimated_wait(100.0) is None


@pytest.mark.parametrize("work_ahead", [0.0, -1.0])
def test_no_work_ahead_is_no_wait_even_when_the_rate_is_unknown(work_ahead: float) -> None:
    drain, _ = make()
    assert drain.estimated_wait(work_ahead) == 0.0


def test_zero_cost_completions_leave_the_rate_unknown() -> None:
    drain, clock = make()
    clock.now += 1.0
    drain.on_complete(0.0)
    assert drain.rate() == 0.0


@pytest.mark.parametrize("half_life_s", [1.0, 5.0, 30.0])
def test_steady_drain_is_measured(half_life_s: float) -> None:
    drain, clock = make(half_life_s)
    steady(drain, clock, cost=100.0, every_s=0.01, for_s=20 * half_life_s)
    assert drain.rate() == pytest.approx(10_000.0, rel=0.01)
    assert drain.estimated_wait(5_000.0) == pytest.approx(0.5, rel=0.01)


@pytest.mark.parametrize("after_s", [1.0, 2.0, 5.0])
def test_early_estimates_are_not_biased_low(after_s: float) -> None:
    """The bias correction: two seconds of 500 work/s read as 500/s, not a fraction of it."""
    drain, clock = make(5.0)
    steady(drain, clock, cost=5.0, every_s=0.01, for_s=after_s)
    assert drain.rate() == pytest.approx(500.0, rel=0.02)


def test_an_instant_completion_is_spread_over_the_minimum_window() -> None:
    drain, _ = make(5.0, min_window_s=1.0)
    drain.on_complete(100.0)
    decay = math.log(2.0) / 5.0
    assert drain.rate() == pytest.approx(decay * 100.0 / (1.0 - math.exp(-decay)))
    assert drain.rate() == pytest.approx(100.0, rel=0.1)  # about 100 work in one second


@pytest.mark.parametrize("half_life_s", [1.0, 5.0])
def test_rate_halves_every_half_life_once_nothing_completes(half_life_s: float) -> None:
    drain, clock = make(half_life_s)
    steady(drain, clock, cost=10.0, every_s=0.1, for_s=40 * half_life_s)
    before = drain.rate()
    clock.now += half_life_s
    assert drain.rate() == pytest.approx(before / 2, rel=1e-6)
    clock.now += 2 * half_life_s
    assert drain.rate() == pytest.approx(before / 8, rel=1e-6)


def test_a_stalled_pool_reports_ever_longer_waits() -> None:
    drain, clock = make(5.0)
    steady(drain, clock, cost=10.0, every_s=0.1, for_s=100.0)
    waits = []
    for _ in range(4):
        waits.append(drain.estimated_wait(1000.0))
        clock.now += 5.0
    assert waits == pytest.approx([10.0, 20.0, 40.0, 80.0], rel=0.01)


def test_rate_follows_a_step_change() -> None:
    drain, clock = make(5.0)
    steady(drain, clock, cost=10.0, every_s=0.01, for_s=100.0)  # 1000/s
    steady(drain, clock, cost=20.0, every_s=0.01, for_s=15.0)  # 2000/s for 3 half-lives
    assert drain.rate() == pytest.approx(2000.0 - 1000.0 / 8, rel=0.01)


def test_a_clock_stepping_back_counts_as_no_time() -> None:
    drain, clock = make(5.0)
    clock.now += 10.0
    drain.on_complete(100.0)
    rate = drain.rate()
    clock.now -= 5.0
    assert drain.rate() == pytest.approx(rate)
    drain.on_complete(100.0)
    assert drain.rate() == pytest.approx(2 * rate)


@pytest.mark.parametrize("half_life_s", [0.0, -1.0, math.inf, math.nan])
def test_invalid_half_life(half_life_s: float) -> None:
    with pytest.raises(ValueError, match=r"^half_life_s must"):
        make(half_life_s)


@pytest.mark.parametrize("min_window_s", [0.0, -1.0, math.inf, math.nan])
def test_invalid_min_window(min_window_s: float) -> None:
    with pytest.raises(ValueError, match=r"^min_window_s must"):
        make(min_window_s=min_window_s)


@pytest.mark.parametrize("cost", [-1.0, math.inf, math.nan])
def test_invalid_cost(cost: float) -> None:
    drain, _ = make()
    with pytest.raises(ValueError, match=r"^cost must"):
        drain.on_complete(cost)


@given(
    half_life_s=st.floats(min_value=0.5, max_value=60.0),
    every_s=st.floats(min_value=0.001, max_value=2.0),
    cost=st.floats(min_value=0.1, max_value=1e5),
    phase=st.floats(min_value=0.0, max_value=1.0),
)
def test_steady_rate_is_read_within_the_tick_error(
    half_life_s: float, every_s: float, cost: float, phase: float
) -> None:
    """Completions of ``cost`` every ``every_s``: read anywhere between two completions, the
    estimate is within ``lambda * every_s`` of ``cost / every_s`` (once warm)."""
    drain, clock = make(half_life_s)
    ticks = math.ceil(30 * half_life_s / every_s) if every_s < half_life_s else 0
    if ticks == 0 or ticks > 50_000:
        return
    steady(drain, clock, cost=cost, every_s=every_s, for_s=ticks * every_s)
    clock.now += phase * every_s * 0.999
    true_rate = cost / every_s
    tolerance = math.log(2.0) / half_life_s * every_s + 1e-6
    assert abs(drain.rate() / true_rate - 1.0) <= tolerance
