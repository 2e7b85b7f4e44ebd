"""When a late first token is raced, and when a stalled replica is given up: by table."""

from __future__ import annotations

import math

import pytest

from gateway.admission.queue import Priority
from gateway.recovery.hedging import Move, Straggler, decide, next_look
from gateway.schema import Recovery

ON = Recovery(hedge_after=1.0, stall_min_s=1.0)  # late as soon as past the band
CALM_10 = Recovery(hedge_after=1.0, stall_min_s=1.0, hedge_calm_s=10.0)
SATURATED_ONLY = Recovery(hedge_after=1.0, stall_min_s=1.0, hedge_calm_s=0.0)
OFF = Recovery(hedge=False, stall_min_s=1.0)
DEFAULT = Recovery(hedge_after=2.0)  # late past twice the band


def _late(**changes: object) -> Straggler:
    """0.6 s since dispatch, past its 0.5 s band; another replica 0.2 s: hedge by default."""
    facts = {
        "elapsed_s": 0.6,
        "upper_s": 0.5,
        "supported": True,
        "hedged": False,
        "alternative_s": 0.2,
        "calm_s": math.inf,
        "anything_waits": False,
        "priority": Priority.STANDARD,
    }
    return Straggler(**{**facts, **changes})  # type: ignore[arg-type]


# (the straggler, settings, budget has room) -> the move
MOVES: dict[str, tuple[Straggler, Recovery, bool, Move]] = {
    "within its band: wait": (_late(elapsed_s=0.4), ON, True, Move.WAIT),
    "past its band, a faster replica free: hedge": (_late(), ON, True, Move.HEDGE),
    "budget spent: wait": (_late(), ON, False, Move.WAIT),
    "hedging off: wait": (_late(), OFF, True, Move.WAIT),
    "already hedged: wait": (_late(hedged=True), ON, True, Move.WAIT),
    "a band from the prior is no evidence: wait": (_late(supported=False), ON, True, Move.WAIT),
    "no other replica free: wait": (_late(alternative_s=None), ON, True, Move.WAIT),
    "the other delivers after this one's stall limit: wait": (
        _late(alternative_s=1.5), ON, True, Move.WAIT),
    "an identical replica (the same prediction) is sooner: hedge": (
        _late(alternative_s=0.5), ON, True, Move.HEDGE),
    "saturated: a hedge would take a queued request's slot": (
        _late(calm_s=0.0), ON, True, Move.WAIT),
    "saturated, even with no calm asked for": (_late(calm_s=0.0), SATURATED_ONLY, True, Move.WAIT),
    "a lull 9 s after a burst (calm 10 s): wait": (_late(calm_s=9.0), CALM_10, True, Move.WAIT),
    "exactly the calm: wait": (_late(calm_s=10.0), CALM_10, True, Move.WAIT),
    "calm longer than asked: hedge": (_late(calm_s=10.5), CALM_10, True, Move.HEDGE),
    "no calm asked for, 1 s after saturation: hedge": (
        _late(calm_s=1.0), SATURATED_ONLY, True, Move.HEDGE),
    "the default calm (30 s), 29 s after a burst: wait": (
        _late(calm_s=29.0), Recovery(), True, Move.WAIT),
    "... 31 s after: hedge": (_late(calm_s=31.0), Recovery(), True, Move.HEDGE),
    "sheddable while work waits: wait": (
        _late(priority=Priority.SHEDDABLE, anything_waits=True), ON, True, Move.WAIT),
    "sheddable, nothing waits: hedge": (_late(priority=Priority.SHEDDABLE), ON, True, Move.HEDGE),
    "past 4x its band: fail over, even saturated, even hedged": (
        _late(elapsed_s=2.0, calm_s=0.0, hedged=True), ON, False, Move.FAIL_OVER),
    "a tiny band: the stall limit is at least 1 s": (
        _late(elapsed_s=0.5, upper_s=0.05), ON, False, Move.WAIT),
    "stalled past 1 s, hedging off: fail over": (
        _late(elapsed_s=1.0, upper_s=0.05), OFF, False, Move.FAIL_OVER),
    "by default, past the band is not yet late: wait": (_late(), DEFAULT, True, Move.WAIT),
    "by default, past twice the band: hedge": (
        _late(elapsed_s=1.0, alternative_s=0.5), DEFAULT, True, Move.HEDGE),
    "the default: late past the band": (_late(), Recovery(), True, Move.HEDGE),
    "a band of 10 ms counts as 62.5 ms (0.25 s / 4): not late at 0.1 s": (
        _late(elapsed_s=0.1, upper_s=0.01, alternative_s=0.05), DEFAULT, True, Move.WAIT),
    "... late past 0.125 s": (
        _late(elapsed_s=0.13, upper_s=0.01, alternative_s=0.05), DEFAULT, True, Move.HEDGE),
    "... failed over past 0.25 s": (
        _late(elapsed_s=0.25, upper_s=0.01), DEFAULT, True, Move.FAIL_OVER),
}  # fmt: skip


@pytest.mark.parametrize(
    ("straggler", "settings", "budget", "move"), MOVES.values(), ids=MOVES.keys()
)
def test_the_move(straggler: Straggler, settings: Recovery, budget: bool, move: Move) -> None:
    assert decide(straggler, settings, budget) is move


@pytest.mark.parametrize(
    ("straggler", "settings", "at"),
    [
        (_late(elapsed_s=0.1), ON, 0.5),  # the band first
        (_late(elapsed_s=0.1), OFF, 2.0),  # hedging off: the stall limit
        (_late(elapsed_s=0.6), ON, 2.0),
        (_late(elapsed_s=3.0), ON, math.inf),  # past everything
        (_late(elapsed_s=0.1), DEFAULT, 1.0),  # twice the band
        (_late(elapsed_s=0.1, upper_s=0.9), DEFAULT, 1.8),
        (_late(elapsed_s=0.1, upper_s=0.9), Recovery(hedge_after=10), 3.6),  # the stall first
    ],
)
def test_when_to_look_again(straggler: Straggler, settings: Recovery, at: float) -> None:
    assert next_look(straggler, settings) == at
