"""Which requests queued inside an engine are taken back (the last sent), and where each
goes, by table."""

from __future__ import annotations

import pytest

from gateway.recovery.take_back import AskedBack, Where, to_take_back, where

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


NOW = 100.0  # the clock when the attempt is asked back


@pytest.mark.parametrize(
    ("taken", "elsewhere", "alone", "first_token_in", "supported", "limit_in", "expected"),
    [
        # Somewhere better now (a hedge out, a free slot elsewhere): it moves there.
        (0, True, False, 5.0, True, 2.0, Where.MOVE),
        (0, True, False, 0.5, True, 2.0, Where.MOVE),
        # The pool's only replica, served there in time on a supported prediction: it stays.
        (0, False, True, 1.5, True, 2.0, Where.STAY),
        (0, False, True, 2.0, True, 2.0, Where.STAY),  # at its limit is in time
        (0, False, True, 9.0, True, None, Where.STAY),  # no limit: late is never too late
        # Other replicas, as full: the pool's next slot comes no later than this engine's.
        (0, False, False, 1.5, True, 2.0, Where.QUEUE),
        (0, False, False, 9.0, True, None, Where.QUEUE),
        # Past its limit there: back to the gateway's queue (served elsewhere, or refused).
        (0, False, True, 2.5, True, 2.0, Where.QUEUE),
        # Nothing known of its wait there: the gateway's queue judges it.
        (0, False, True, 1.5, False, 2.0, Where.QUEUE),
        (0, False, True, 1.5, False, None, Where.QUEUE),
        # Taken back as often as allowed: it stays, wherever it would go.
        (1, True, False, 5.0, True, 2.0, Where.STAY),
        (1, False, False, 9.0, True, 2.0, Where.STAY),
    ],
)
def test_where_an_attempt_asked_back_goes(
    taken: int,
    elsewhere: bool,
    alone: bool,
    first_token_in: float,
    supported: bool,
    limit_in: float | None,
    expected: Where,
) -> None:
    limit = None if limit_in is None else NOW + limit_in
    asked = AskedBack(taken, 1, elsewhere, alone, NOW + first_token_in, supported, limit)
    assert where(asked) is expected


@pytest.mark.parametrize(("taken", "max_taken", "expected"), [(0, 0, Where.STAY),
                         (1, 2, Where.QUEUE), (2, 2, Where.STAY)])  # fmt: skip
def test_the_bound_on_take_backs(taken: int, max_taken: int, expected: Where) -> None:
    asked = AskedBack(taken, max_taken, False, True, NOW + 5.0, True, NOW + 2.0)
    assert where(asked) is expected
