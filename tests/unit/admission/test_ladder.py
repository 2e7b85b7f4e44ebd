"""Overload ladder: steps up and down with hysteresis, and the verdict per priority."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.admission.ladder import Action, Ladder, Signals, Step, verdict
from gateway.admission.queue import Priority

LADDER = Ladder(
    steps=(
        Step(Action.DEGRADE, queue_depth=10, kv_usage=0.9),
        Step(Action.SHED_SHEDDABLE, queue_depth=50, wait_s=10.0),
        Step(Action.SHED_STANDARD, queue_depth=200, backend_waiting=100.0),
    ),
    hysteresis=0.8,
)


def sig(depth: int = 0, wait: float | None = 0.0, waiting: float = 0.0, kv: float = 0.0) -> Signals:
    return Signals(queue_depth=depth, estimated_wait_s=wait, backend_waiting=waiting, kv_usage=kv)


# id -> [(signals, level after them)], starting at level 0
SEQUENCES: dict[str, list[tuple[Signals, int]]] = {
    "calm": [(sig(), 0), (sig(depth=9, kv=0.89), 0)],
    "threshold reached enters": [(sig(depth=10), 1)],
    "any signal enters": [(sig(kv=0.9), 1)],
    "jumps straight to the highest reached step": [(sig(depth=200), 3)],
    "a higher step alone brings the lower ones": [(sig(waiting=100.0), 3)],
    "wait enters its step": [(sig(wait=10.0), 2)],
    "holds between hysteresis and threshold": [(sig(depth=10), 1), (sig(depth=9), 1)],
    "exactly hysteresis * threshold holds": [(sig(depth=10), 1), (sig(depth=8), 1)],
    "leaves below hysteresis": [(sig(depth=10), 1), (sig(depth=7), 0)],
    "kv holds above hysteresis * threshold": [(sig(kv=0.9), 1), (sig(kv=0.75), 1)],
    "leaving needs all signals clear": [
        (sig(depth=10, kv=0.95), 1),
        (sig(depth=0, kv=0.85), 1),
        (sig(depth=0, kv=0.5), 0),
    ],
    "falls several steps at once when all clear": [(sig(depth=200), 3), (sig(), 0)],
    "falls step by step as signals ease": [
        (sig(depth=200), 3),
        (sig(depth=150), 2),  # below 0.8 * 200, not below 0.8 * 50
        (sig(depth=30), 1),  # below 0.8 * 50, not below 0.8 * 10
        (sig(depth=8), 1),
        (sig(depth=7), 0),
    ],
    "a held top step holds the ones below": [(sig(depth=50), 2), (sig(depth=40, kv=0.0), 2)],
    "climbs while held": [(sig(depth=10), 1), (sig(depth=8, wait=10.0), 2)],
    "unknown wait neither enters": [(sig(wait=None), 0)],
    "nor holds": [(sig(wait=10.0), 2), (sig(wait=None), 0)],
}


@pytest.mark.parametrize("steps", SEQUENCES.values(), ids=SEQUENCES.keys())
def test_sequence(steps: list[tuple[Signals, int]]) -> None:
    level = 0
    for number, (signals, expected) in enumerate(steps):
        level = LADDER.step(signals, level)
        assert level == expected, f"step {number}: {signals}"


@pytest.mark.parametrize(
    ("signals", "current", "expected"),
    [
        (sig(depth=190), -3, 2),  # as from 0: step 2 is reached
        (sig(), -3, 0),
        (sig(depth=190), 9, 3),  # as from 3: 190 is not below 0.8 * 200, so 3 holds
        (sig(), 9, 0),
    ],
)
def test_current_out_of_range_is_clamped(signals: Signals, current: int, expected: int) -> None:
    assert LADDER.step(signals, current) == expected


def test_empty_ladder_is_never_overloaded() -> None:
    ladder = Ladder(steps=())
    assert ladder.step(sig(depth=10**6, kv=1.0), 0) == 0
    assert ladder.actions(5) == ()


def test_hysteresis_of_one_leaves_as_soon_as_below() -> None:
    ladder = Ladder(steps=(Step(Action.DEGRADE, queue_depth=10),), hysteresis=1.0)
    assert ladder.step(sig(depth=10), 0) == 1
    assert ladder.step(sig(depth=9), 1) == 0


@pytest.mark.parametrize(
    ("level", "actions"),
    [
        (0, ()),
        (1, (Action.DEGRADE,)),
        (2, (Action.DEGRADE, Action.SHED_SHEDDABLE)),
        (3, (Action.DEGRADE, Action.SHED_SHEDDABLE, Action.SHED_STANDARD)),
        (7, (Action.DEGRADE, Action.SHED_SHEDDABLE, Action.SHED_STANDARD)),
        (-1, ()),
    ],
)
def test_actions(level: int, actions: tuple[Action, ...]) -> None:
    assert LADDER.actions(level) == actions


D, SS, SD = Action.DEGRADE, Action.SHED_SHEDDABLE, Action.SHED_STANDARD
C, S, X = Priority.CRITICAL, Priority.STANDARD, Priority.SHEDDABLE

# active actions -> verdict for (critical, standard, sheddable)
VERDICTS: dict[tuple[Action, ...], tuple[str, str, str]] = {
    (): ("admit", "admit", "admit"),
    (D,): ("degrade", "degrade", "degrade"),
    (SS,): ("admit", "admit", "shed"),
    (D, SS): ("degrade", "degrade", "shed"),
    (SD,): ("admit", "shed", "shed"),  # shedding standard sheds sheddable too
    (D, SD): ("degrade", "shed", "shed"),
    (SS, SD): ("admit", "shed", "shed"),
    (D, SS, SD): ("degrade", "shed", "shed"),
}


@pytest.mark.parametrize(("actions", "expected"), VERDICTS.items(), ids=str)
def test_verdict(actions: tuple[Action, ...], expected: tuple[str, str, str]) -> None:
    assert (verdict(actions, C), verdict(actions, S), verdict(actions, X)) == expected
    assert verdict(list(reversed(actions)), S) == expected[1]


STEP_INVALID: dict[str, tuple[dict[str, Any], str]] = {
    "no threshold": ({}, "thresholds"),
    "negative depth": ({"queue_depth": -1}, "queue_depth"),
    "negative wait": ({"wait_s": -1.0}, "wait_s"),
    "nan wait": ({"wait_s": math.nan}, "wait_s"),
    "negative backend waiting": ({"backend_waiting": -0.5}, "backend_waiting"),
    "kv above one": ({"kv_usage": 1.5}, "kv_usage"),
    "nan kv": ({"kv_usage": math.nan}, "kv_usage"),
}


@pytest.mark.parametrize(("kwargs", "field"), STEP_INVALID.values(), ids=STEP_INVALID.keys())
def test_invalid_step(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=f"^{field} must"):
        Step(Action.DEGRADE, **kwargs)


@pytest.mark.parametrize("hysteresis", [0.0, -0.5, 1.5, math.nan])
def test_invalid_hysteresis(hysteresis: float) -> None:
    with pytest.raises(ValueError, match=r"^hysteresis must"):
        Ladder(steps=(), hysteresis=hysteresis)


SIGNALS = st.builds(
    Signals,
    queue_depth=st.integers(min_value=0, max_value=300),
    estimated_wait_s=st.one_of(st.none(), st.floats(min_value=0.0, max_value=20.0)),
    backend_waiting=st.floats(min_value=0.0, max_value=150.0),
    kv_usage=st.floats(min_value=0.0, max_value=1.0),
)


@given(signals=SIGNALS, current=st.integers(min_value=0, max_value=3))
def test_step_properties(signals: Signals, current: int) -> None:
    level = LADDER.step(signals, current)
    assert 0 <= level <= 3
    # Every reached step is active.
    for index, step in enumerate(LADDER.steps):
        if step.reached(signals):
            assert level >= index + 1
    # Above what is reached, the level only holds what was already active.
    reached = max((i + 1 for i, s in enumerate(LADDER.steps) if s.reached(signals)), default=0)
    assert level == reached or reached < level <= current
    # No flapping: the same signals again change nothing.
    assert LADDER.step(signals, level) == level


@given(levels=st.lists(SIGNALS, min_size=1, max_size=30))
def test_identical_signals_never_flap(levels: list[Signals]) -> None:
    level = 0
    for signals in levels:
        level = LADDER.step(signals, level)
        assert LADDER.step(signals, level) == level
