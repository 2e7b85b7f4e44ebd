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
