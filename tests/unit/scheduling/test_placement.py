"""Where a prefix nobody holds goes: the level replica with the least cached work."""

from __future__ import annotations

import random

import pytest

from gateway.scheduling.placement import level_candidates, spread_new_prefix


@pytest.mark.parametrize(
    ("loads", "usages", "level"),
    [
        ([0, 0, 0, 0], [0.0, 0.0, 0.0, 0.0], [0, 1, 2, 3]),  # idle and flat: all level
        ([1, 0, 0, 0], [0.0, 0.0, 0.0, 0.0], [1, 2, 3]),  # the busy one is not
        ([0, 1, 1, 1], [0.0, 0.0, 0.0, 0.0], [0]),  # one least loaded
        ([0, 0, 0], [0.02, 0.0, 0.06], [0, 1]),  # within 0.05 of the lowest usage
        ([2, 2], [0.9, 0.1], [1]),  # equal load, very different KV usage
        ([0.0, 3.0, 0.0], [0.5, 0.0, 0.54], [0, 2]),  # usage compared among the least loaded
    ],
)
def test_level_candidates(loads: list[float], usages: list[float], level: list[int]) -> None:
    assert level_candidates(loads, usages, 0.05) == level


@pytest.mark.parametrize(
    ("loads", "usages", "work", "placed"),
    [
        ([0, 0, 0, 0], [0.0] * 4, [30.0, 0.0, 12.0, 5.0], 1),  # least cached work wins
        ([0, 0, 0, 0], [0.0] * 4, [0.0, 9.0, 9.0, 9.0], 0),
        ([1, 0, 0, 0], [0.0] * 4, [0.0, 9.0, 3.0, 9.0], 2),  # the emptiest is busy: next one
        ([0, 1, 1, 1], [0.0] * 4, [9.0, 0.0, 0.0, 0.0], None),  # load alone decides
        ([0, 0], [0.0, 0.3], [9.0, 0.0], None),  # KV usage tells them apart
    ],
)
def test_spread_new_prefix(
    loads: list[float], usages: list[float], work: list[float], placed: int | None
) -> None:
    assert spread_new_prefix(loads, usages, work, 0.05, random.Random(0)) == placed


def test_ties_on_work_are_drawn_over_every_tied_replica() -> None:
    rng = random.Random(3)
    seen = {spread_new_prefix([0, 0, 0], [0.0] * 3, [1.0, 1.0, 4.0], 0.05, rng) for _ in range(50)}
    assert seen == {0, 1}
