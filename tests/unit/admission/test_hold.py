"""Slot hold times and the queue wait they predict."""

from __future__ import annotations

import math

import pytest

from gateway.admission.hold import HoldTimes

NOW = 10.0

# (sampled holds, how long each holder has held its slot, slots) -> the next three waits
WAITS: dict[str, tuple[list[float], list[float], int, list[float]]] = {
    # Slots it sees no holder of (another gateway's, under the cluster's leases): just taken.
    "unseen holders: the prior (5 s) each": ([], [], 2, [5.0, 5.0, 10.0]),
    # Holds of 1 and 3 s (mean 2): of two slots just taken, one is expected back after 1 s
    # and the other after 3 s, not both after 2 s.
    "two just taken: the spread of the holds": ([1.0, 3.0], [0.0, 0.0], 2, [1.0, 3.0, 3.0]),
    "one held 2 s: the 3 s kind": ([1.0, 3.0], [2.0], 1, [1.0, 3.0, 5.0]),
    "held longer than any sample: as long again": ([1.0, 3.0], [4.0], 1, [4.0, 6.0, 8.0]),
    # Three holders on two slots: the first release (0.5 s) frees no slot.
    "a release beyond the slots frees none": ([2.0], [0.0, 0.5, 1.5], 2, [1.5, 2.0, 3.5]),
    "no slot at all": ([1.0], [], 0, [math.inf] * 3),
}


@pytest.mark.parametrize(("holds", "held", "slots", "waits"), WAITS.values(), ids=WAITS.keys())
def test_the_waits_from_the_holders_and_the_sampled_holds(
    holds: list[float], held: list[float], slots: int, waits: list[float]
) -> None:
    hold = HoldTimes(prior_s=5.0)
    for h in holds:
        hold.on_release(h)
    for h in held:
        hold.start(NOW - h)
    # A release is placed at the first point of the geometric grid past it: a few % late.
    assert hold.expected_waits(3, slots, NOW) == pytest.approx(waits, rel=0.05)
    assert hold.expected_s(1, slots, NOW) == pytest.approx(waits[1], rel=0.05)
    got = hold.expected_waits(3, slots, NOW)
    assert all(g >= w for g, w in zip(got, waits, strict=True))  # never early


def test_a_holder_stuck_for_minutes_does_not_blur_the_others() -> None:
    hold = HoldTimes(prior_s=5.0)
    for h in (1.0, 3.0):
        hold.on_release(h)
    for h in (0.0, 0.0, 600.0):  # two just taken, one generating for ten minutes
        hold.start(NOW - h)
    assert hold.expected_waits(3, 3, NOW) == pytest.approx([1.0, 3.0, 600.0], rel=0.07)


def test_a_weighted_position_is_in_proportion_between_two() -> None:
    hold = HoldTimes(prior_s=5.0)
    for h in (1.0, 3.0):
        hold.on_release(h)
    for _ in range(2):
        hold.start(NOW)
    assert hold.expected_s(0.5, 2, NOW) == pytest.approx(2.0, rel=0.05)  # between 1 and 3 s


def test_a_release_ends_the_holder_that_started_nearest_its_hold() -> None:
    hold = HoldTimes()
    for started in (1.0, 2.0, 3.0):
        hold.start(started)
    hold.end(5.0, 3.9)  # started at 1.1: the one of 1.0
    assert hold.expected_waits(1, 2, 5.0) != []  # still coherent
    assert hold.holders == 2
    hold.end(5.0, None)  # the latest taken (a slot handed back at once)
    hold.end(5.0, None)
    hold.end(5.0, None)  # none left: nothing to end
    assert hold.holders == 0


def test_only_the_latest_holds_are_kept() -> None:
    hold = HoldTimes(prior_s=5.0, window=2)
    for h in (1.0, 5.0, 3.0):
        hold.on_release(h)
    assert (hold.mean_s, hold.releases) == (4.0, 3)


def test_an_idle_pool_keeps_its_holds() -> None:
    hold = HoldTimes(prior_s=5.0)
    hold.on_release(1.0)
    assert hold.expected_waits(2, 1, NOW) == hold.expected_waits(2, 1, NOW + 3600.0)


@pytest.mark.parametrize("held", [float("nan"), -1.0, float("inf")])
def test_nonsense_hold_times_are_ignored(held: float) -> None:
    hold = HoldTimes(prior_s=5.0)
    hold.on_release(held)
    assert (hold.mean_s, hold.releases) == (5.0, 0)


@pytest.mark.parametrize(("prior", "window"), [(0.0, 8), (float("nan"), 8), (5.0, 0)])
def test_bad_parameters(prior: float, window: int) -> None:
    with pytest.raises(ValueError, match="must be"):
        HoldTimes(prior_s=prior, window=window)


# (observed / expected waits, in order) -> the calibration factor after them
CALIBRATION: dict[str, tuple[list[tuple[float, float]], float]] = {
    "nothing observed: the expected wait": ([], 1.0),
    "waits as expected or shorter: never below 1": ([(1.0, 2.0)] * 30, 1.0),
    "one long wait: up by eta x 0.9": ([(3.0, 1.0)], 1.045),
    "then shorter ones bring it down by eta x 0.1 each": ([(3.0, 1.0), (0.5, 1.0)], 1.04),
    "a systematic 2x under-prediction is learned": ([(2.0, 1.0)] * 40, 2.0),
    "nonsense is ignored": ([(float("nan"), 1.0), (1.0, 0.0), (float("inf"), 1.0)], 1.0),
}


@pytest.mark.parametrize(("waits", "factor"), CALIBRATION.values(), ids=CALIBRATION.keys())
def test_the_wait_is_calibrated_to_its_90th_percentile(
    waits: list[tuple[float, float]], factor: float
) -> None:
    hold = HoldTimes(prior_s=4.0, eta=0.05)
    for observed, expected in waits:
        hold.on_wait(observed, expected)
    assert hold.ratio_p90 == pytest.approx(factor, abs=0.05 if factor == 2.0 else 1e-9)
    hold.start(NOW)
    assert hold.expected_s(0, 1, NOW) == pytest.approx(4.0)  # uncalibrated: the prior
    assert hold.wait_s(0, 1, NOW) == pytest.approx(4.0 * hold.ratio_p90)


# (sampled holds, how long each current holder has held its slot) -> the mean hold the
# pool's service rate is read from: while fewer releases are sampled than slots are held, the
# sampled holds plus the holders' time so far, over the sampled releases; then the plain mean.
SERVED: dict[str, tuple[list[float], list[float], float]] = {
    "nothing released yet: the prior": ([], [3.0, 3.0], 5.0),
    "no holder: the plain mean": ([1.0, 3.0], [], 2.0),
    # A burst's first two answers were quick while seven slots are still held for 2 s: the
    # plain mean (0.75 s) would read 8 slots as 10.7 requests/s.
    "quick first answers, slots still held": ([0.5, 1.0], [2.0] * 7, 7.75),
    "as many releases as holders: the plain mean": ([1.0, 3.0], [2.0] * 2, 2.0),
    "many releases: the plain mean": ([2.0] * 200, [1.0] * 8, 2.0),
}


@pytest.mark.parametrize(("holds", "held", "mean"), SERVED.values(), ids=SERVED.keys())
def test_the_served_mean_counts_the_holders_time_so_far(
    holds: list[float], held: list[float], mean: float
) -> None:
    hold = HoldTimes(prior_s=5.0)
    for h in holds:
        hold.on_release(h)
    for h in held:
        hold.start(NOW - h)
    assert hold.served_mean_s(NOW) == pytest.approx(mean)
