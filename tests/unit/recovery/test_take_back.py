"""Which requests queued inside an engine are taken back: the last sent, by table."""

from __future__ import annotations

import pytest

from gateway.recovery.take_back import to_take_back

PENDING = ["a", "b", "c", "d"]  # oldest first


@pytest.mark.parametrize(
    ("inflight", "cap", "waiting", "taken"),
    [
        (6, 4, 5.0, ["c", "d"]),  # two beyond its cap: the two last sent
        (6, 4, 1.0, ["d"]),  # the engine says one waits
        (4, 4, 3.0, []),  # within its cap: others' queue, not ours
        (9, 2, 9.0, ["a", "b", "c", "d"]),  # no more than are still pending
        (6, 4, 0.0, []),  # nothing waits inside it
    ],
)
def test_the_last_sent_beyond_the_cap(
    inflight: int, cap: int, waiting: float, taken: list[str]
) -> None:
    assert to_take_back(PENDING, inflight, cap, waiting) == taken
