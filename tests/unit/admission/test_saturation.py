"""The pool state, from evidence: a table of arrival and completion patterns on an injected
clock, onset and recovery (no servers, no sleeps)."""

from __future__ import annotations

import math

import pytest

from gateway.admission.saturation import Rate, Saturation, State, Waiting

QUEUED = Waiting(queued=5, in_engines=0.0)
ENGINES = Waiting(queued=0, in_engines=3.0)
NOTHING = Waiting(queued=0, in_engines=0.0)


def _no_wait() -> float | None:
    return None


def test_a_rate_is_events_per_second_over_about_tau() -> None:
    rate = Rate(2.0)
    assert rate.read(0.0) == 0.0
    for i in range(200):  # 10 per second for 20 s
        rate.add(i / 10)
    assert rate.read(19.9) == pytest.approx(10.0, rel=0.06)
    assert rate.read(21.9) == pytest.approx(10.0 * math.exp(-1.0), rel=0.06)  # decays


# (arrivals per second, completions per second, waiting) -> the state after 10 s of it
PATTERNS: dict[str, tuple[float, float, Waiting, State]] = {
    "keeping up, nothing waits": (5.0, 5.0, NOTHING, State.NOMINAL),
    "arriving faster, but nothing waits": (10.0, 5.0, NOTHING, State.NOMINAL),
    "a queue that drains as fast as it fills": (5.0, 5.0, QUEUED, State.NOMINAL),
    "arriving somewhat faster (1.2x): within the margin": (6.0, 5.0, QUEUED, State.NOMINAL),
    "arriving 2x faster with a queue": (10.0, 5.0, QUEUED, State.SATURATED),
    "engines report a queue, 2x faster": (10.0, 5.0, ENGINES, State.SATURATED),
    "a burst with nothing completing": (10.0, 0.0, QUEUED, State.SATURATED),
}


@pytest.mark.parametrize(
    ("arrive", "complete", "waiting", "state"), PATTERNS.values(), ids=PATTERNS.keys()
)
def test_the_state_of_a_pattern(
    arrive: float, complete: float, waiting: Waiting, state: State
) -> None:
    saturation = Saturation()
    _feed(saturation, arrive, complete, 0.0, 10.0)
    found = saturation.state(10.0, waiting, _no_wait, None)
    assert found.state is state
    assert found.saturated is (state is not State.NOMINAL)
    assert found.arrivals_per_s == pytest.approx(arrive, rel=0.1)


def test_overloaded_when_a_new_request_would_wait_past_the_deadline() -> None:
    saturation = Saturation()
    _feed(saturation, 10.0, 2.0, 0.0, 10.0)
    assert saturation.state(10.0, QUEUED, lambda: 5.0, 6.0).state is State.SATURATED
    found = saturation.state(10.0, QUEUED, lambda: 7.5, 6.0)
    assert found.state is State.OVERLOADED
    assert "would wait 7.5 s, past 6.0 s" in found.reason


def test_onset_and_recovery_with_hysteresis() -> None:
    saturation = Saturation()
    _feed(saturation, 5.0, 5.0, 0.0, 10.0)
    assert not saturation.state(10.0, QUEUED, _no_wait, None).saturated
    _feed(saturation, 10.0, 5.0, 10.0, 13.0)  # a burst at twice the drain
    assert saturation.state(13.0, QUEUED, _no_wait, None).saturated
    _feed(saturation, 6.0, 5.0, 13.0, 25.0)  # back to 1.2x: above 1.0, stays saturated
    assert saturation.state(25.0, QUEUED, _no_wait, None).saturated
    _feed(saturation, 4.0, 5.0, 25.0, 35.0)  # below the drain: recovers
    assert not saturation.state(35.0, QUEUED, _no_wait, None).saturated
    _feed(saturation, 6.0, 5.0, 35.0, 45.0)  # 1.2x again, from nominal: below 1.3x
    assert not saturation.state(45.0, QUEUED, _no_wait, None).saturated


def test_a_drained_queue_ends_saturation_at_once() -> None:
    saturation = Saturation()
    _feed(saturation, 10.0, 2.0, 0.0, 10.0)
    assert saturation.state(10.0, QUEUED, _no_wait, None).saturated
    found = saturation.state(10.0, NOTHING, _no_wait, None)
    assert (found.state, found.reason.split(":")[0]) == (State.NOMINAL, "keeping up")


def _feed(saturation: Saturation, arrive: float, complete: float, start: float, end: float) -> None:
    """Evenly spaced arrivals and completions at these rates over [start, end)."""
    events = [(start + i / arrive, "a") for i in range(int((end - start) * arrive))]
    if complete:
        events += [(start + i / complete, "c") for i in range(int((end - start) * complete))]
    for at, kind in sorted(events):
        (saturation.arrived if kind == "a" else saturation.completed)(at)


# (arrivals per s, drain per s, noise_z) -> faster than enter_ratio (1.5) x drain?
NOISE: dict[str, tuple[float, float, float, bool]] = {
    "a clump at 1x (3.8/s against 2.63/s: 1.45x) is noise": (3.8, 2.63, 1.0, False),
    "1.6x at 2.63/s: past the ratio, within the noise": (4.2, 2.63, 1.0, False),
    "... without the margin: faster": (4.2, 2.63, 0.0, True),
    "2x at 2.63/s: faster": (5.26, 2.63, 1.0, True),
    "1.6x at 100/s: the noise is small against the count": (160.0, 100.0, 1.0, True),
    "nothing draining: any arrival is faster": (0.5, 0.0, 1.0, True),
}  # fmt: skip


@pytest.mark.parametrize(("arrive", "drain", "z", "faster"), NOISE.values(), ids=NOISE.keys())
def test_faster_is_past_the_ratio_by_more_than_poisson_noise(
    arrive: float, drain: float, z: float, faster: bool
) -> None:
    assert Saturation(noise_z=z).faster(arrive, drain, 1.5) is faster


def test_a_clump_at_1x_leaves_the_pool_nominal_a_sustained_3x_does_not() -> None:
    """Seven arrivals in a second on a 2.63/s drain (its slots over their hold: a burst's
    clump at 1x): nominal; 3x for 3 s: saturated."""
    saturation, drain = Saturation(), 2.63
    _feed(saturation, 2.63, 2.63, 0.0, 10.0)
    _feed(saturation, 7.0, 0.0, 10.0, 11.0)
    assert not saturation.state(11.0, QUEUED, _no_wait, None, drain).saturated
    assert Saturation(noise_z=0.0).faster(saturation.arrivals.read(11.0), drain, 1.5)
    _feed(saturation, 7.9, 0.0, 11.0, 14.0)
    assert saturation.state(14.0, QUEUED, _no_wait, None, drain).saturated


def test_calm_counts_from_the_last_saturated_reading_of_a_burst_train() -> None:
    """Bursts at 3x a 2.63/s drain (5 s on, 10 s off at 0.4x): each lull reads nominal within
    seconds, while ``calm_s`` counts from the burst's last saturated reading."""
    saturation, drain = Saturation(), 2.63
    assert saturation.calm_s(0.0) == math.inf  # never saturated
    readings: dict[float, bool] = {}
    for start in (0.0, 15.0):
        for begin, end, arrive, complete in ((0, 5, 7.9, 0.0), (5, 15, 1.05, drain)):
            _feed(saturation, arrive, complete, start + begin, start + end)
            for at in (start + end - 1, start + end):
                readings[at] = saturation.state(at, QUEUED, _no_wait, None, drain).saturated
    assert readings == {4.0: True, 5.0: True, 14.0: False, 15.0: False,
                        19.0: True, 20.0: True, 29.0: False, 30.0: False}  # fmt: skip
    assert saturation.calm_s(20.0) == 0.0
    assert saturation.calm_s(30.0) == 10.0  # the lull's end: 10 s since the burst's last reading
    assert saturation.calm_s(19.0) == 0.0  # a clock read before the last reading: no less than 0


# After a burst stops, arrivals fall below the drain; whether the pool stays saturated is the
# backlog's (the controller's reading: a waiter, or a new request's slot, past its objective).
BACKLOG = {
    "the backlog is late": (True, True),
    "the backlog can be served in time": (False, False),
}


@pytest.mark.parametrize(("late", "stays"), BACKLOG.values(), ids=BACKLOG.keys())
def test_a_bursts_late_backlog_keeps_the_pool_saturated(late: bool, stays: bool) -> None:
    saturation = Saturation()
    _feed(saturation, 10.0, 5.0, 0.0, 3.0)  # a burst at twice the drain
    assert saturation.state(3.0, QUEUED, _no_wait, None).saturated
    _feed(saturation, 0.0, 5.0, 3.0, 8.0)  # it stopped: arrivals far below the drain
    found = saturation.state(8.0, QUEUED, _no_wait, None, backlog_late=lambda: late)
    assert found.saturated is stays
    assert not saturation.state(8.0, NOTHING, _no_wait, None, backlog_late=lambda: True).saturated


def test_a_late_backlog_alone_does_not_start_saturation() -> None:
    """Entering takes arrivals past the drain: a clump at 1x leaves a late backlog too."""
    saturation = Saturation()
    _feed(saturation, 5.0, 5.0, 0.0, 10.0)
    assert not saturation.state(10.0, QUEUED, _no_wait, None, backlog_late=lambda: True).saturated
