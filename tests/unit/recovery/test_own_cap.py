"""A worker's part of what the host has queued inside an engine beyond its cap."""

from __future__ import annotations

import pytest

from gateway.recovery.take_back import own_cap, to_take_back


@pytest.mark.parametrize(
    ("own", "host", "cap", "expected"),
    [
        (6, 6, 4, 4),  # alone: the cap itself
        (0, 5, 4, 4),  # nothing of ours there
        (3, 6, 4, 2),  # half of the host's, half of the excess of 2: takes back 1
        (1, 6, 4, 0),  # a sixth of an excess of 2, rounded up: its one request
        (5, 6, 8, 5),  # the host is under the cap: nothing to take back
    ],
)
def test_each_worker_takes_back_its_share(own: int, host: float, cap: int, expected: int) -> None:
    assert own_cap(own, host, cap) == expected


def test_two_workers_together_take_back_the_excess_once() -> None:
    cap, reported = 4, 10.0
    mine, theirs = list(range(4)), list(range(4))  # each has 4 waiting for a first token
    taken = [to_take_back(p, 4, own_cap(4, 8, cap), reported) for p in (mine, theirs)]
    assert sum(len(t) for t in taken) == 4  # the host's 8 in flight over the cap of 4
