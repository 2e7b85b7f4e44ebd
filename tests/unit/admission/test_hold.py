"""Slot hold times and the queue wait they predict."""

from __future__ import annotations

import math

import pytest

from gateway.admission.hold import HoldTimes


@pytest.mark.parametrize(
    ("holds", "position", "slots", "wait"),
    [
        ([], 0, 2, 2.5),  # the prior (5 s) before any release: 1 x 5 / 2
        ([0.6], 0, 2, 0.3),  # the first release replaces the prior
        ([0.6], 5, 2, 1.8),
        ([0.6, 0.6, 0.6], 9, 4, 1.5),
        ([], 0, 0, math.inf),  # no slot at all
    ],
)
def test_wait_from_position_slots_and_hold(
    holds: list[float], position: int, slots: int, wait: float
) -> None:
    hold = HoldTimes(prior_s=5.0)
    for held in holds:
        hold.on_release(held)
    assert hold.wait_s(position, slots) == pytest.approx(wait)


def test_mean_moves_by_alpha_per_release_not_per_second() -> None:
    hold = HoldTimes(prior_s=5.0, alpha=0.5)
    hold.on_release(1.0)
    hold.on_release(3.0)
    assert hold.mean_s == pytest.approx(2.0)


@pytest.mark.parametrize("held", [float("nan"), -1.0, float("inf")])
def test_nonsense_hold_times_are_ignored(held: float) -> None:
    hold = HoldTimes(prior_s=5.0)
    hold.on_release(held)
    assert (hold.mean_s, hold.releases) == (5.0, 0)


@pytest.mark.parametrize(("prior", "alpha"), [(0.0, 0.2), (5.0, 0.0), (5.0, 1.5)])
def test_bad_parameters(prior: float, alpha: float) -> None:
    with pytest.raises(ValueError, match="must be"):
        HoldTimes(prior_s=prior, alpha=alpha)


# (observed / expected waits, in order) -> the calibration factor after them
CALIBRATION: dict[str, tuple[list[tuple[float, float]], float]] = {
    "nothing observed: the even-spread wait": ([], 1.0),
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
    assert hold.wait_s(1, 4) == pytest.approx(hold.expected_s(1, 4) * hold.ratio_p90)
    assert hold.expected_s(1, 4) == pytest.approx(2.0)  # uncalibrated: (1 + 1) x 4 / 4


def test_early_releases_are_a_running_mean_not_the_first_one_held_on_to() -> None:
    hold = HoldTimes(prior_s=5.0, alpha=0.2)
    for held in (0.5, 2.5, 3.0):  # a burst's quickest answer first, then the longer ones
        hold.on_release(held)
    assert hold.mean_s == pytest.approx(2.0)  # (0.5 + 2.5 + 3.0) / 3; the EWMA said 1.32
