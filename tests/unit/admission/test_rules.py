"""When admission refuses on a prediction: the rules as a table (late but served below
saturation, the deadline, the objective in saturation, critical requests, guesses)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from gateway.admission.decision import AdmissionRequest, Prediction
from gateway.admission.queue import Lane, Priority
from gateway.admission.rules import (
    DEADLINE,
    OBJECTIVE,
    Times,
    deadline_of,
    give_up_at,
    late_reason,
    queue_cap,
)
from gateway.admission.saturation import PoolState, State

NOMINAL = PoolState(State.NOMINAL, "keeping up", 1.0, 1.0)
SATURATED = PoolState(State.SATURATED, "3 waiting", 3.0, 1.0)
OVERLOADED = PoolState(State.OVERLOADED, "3 waiting; past the deadline", 9.0, 1.0)
# Arrived at 100 s, objective 2 s, deadline 6 s (3x): decided at 100.5 s.
TIMES = Times(arrival=100.0, objective_s=2.0, deadline=106.0)
NOW = 100.5


def _request(priority: Priority = Priority.STANDARD) -> AdmissionRequest:
    return AdmissionRequest(priority, Lane.SHORT, 300.0, None, False, 100.0, arrival=100.0)


# (predicted first token from now, supported, priority, pool state) -> reason (None: admitted)
RULES: dict[str, tuple[float, bool, Priority, PoolState, str | None]] = {
    "in time": (1.0, True, Priority.STANDARD, NOMINAL, None),
    "late, below saturation: served": (3.0, True, Priority.STANDARD, NOMINAL, None),
    "past the deadline: useless to wait": (6.0, True, Priority.STANDARD, NOMINAL, DEADLINE),
    "late, saturated: refused": (3.0, True, Priority.STANDARD, SATURATED, OBJECTIVE),
    "in time, saturated": (1.4, True, Priority.STANDARD, SATURATED, None),
    "late, overloaded": (3.0, True, Priority.STANDARD, OVERLOADED, OBJECTIVE),
    "sheddable, late, saturated": (3.0, True, Priority.SHEDDABLE, SATURATED, OBJECTIVE),
    "sheddable, late, below saturation": (3.0, True, Priority.SHEDDABLE, NOMINAL, None),
    "critical: only hard caps": (60.0, True, Priority.CRITICAL, OVERLOADED, None),
    "a guess past the deadline: admitted to learn": (9.0, False, Priority.STANDARD, NOMINAL, None),
    "a guess, saturated: admitted to learn": (3.0, False, Priority.STANDARD, SATURATED, None),
}  # fmt: skip


@pytest.mark.parametrize(
    ("first_token_s", "supported", "priority", "state", "reason"), RULES.values(), ids=RULES.keys()
)
def test_the_rules(
    first_token_s: float, supported: bool, priority: Priority, state: PoolState, reason: str | None
) -> None:
    prediction = Prediction(wait_s=first_token_s - 0.2, backend_s=0.2, supported=supported)
    assert late_reason(_request(priority), prediction, TIMES, state, NOW) == reason


# (client deadline from arrival, objective, factor) -> the deadline (from arrival)
DEADLINES: dict[str, tuple[float | None, float | None, float, float | None]] = {
    "the pool's default: 3x the objective": (None, 2.0, 3.0, 6.0),
    "the client's, when sooner": (1.0, 2.0, 3.0, 1.0),
    "the default, when the client's is later": (30.0, 2.0, 3.0, 6.0),
    "no objective: the client's alone": (4.0, None, 3.0, 4.0),
    "no objective, no client deadline: none": (None, None, 3.0, None),
}  # fmt: skip


@pytest.mark.parametrize(
    ("client", "objective", "factor", "deadline"), DEADLINES.values(), ids=DEADLINES.keys()
)
def test_a_requests_deadline(
    client: float | None, objective: float | None, factor: float, deadline: float | None
) -> None:
    request = AdmissionRequest(
        Priority.STANDARD,
        Lane.SHORT,
        1.0,
        None if client is None else 100.0 + client,
        False,
        arrival=100.0,
    )
    times = deadline_of(request, objective, factor, now=100.5)
    assert times.deadline == (None if deadline is None else pytest.approx(100.0 + deadline))


@pytest.mark.parametrize(("saturated", "give_up"), [(False, 106.0 - 0.3), (True, 102.0 - 0.3)])
def test_a_waiter_gives_up_at_its_deadline_and_in_saturation_at_its_objective(
    saturated: bool, give_up: float
) -> None:
    assert give_up_at(TIMES, backend_s=0.3, saturated=saturated) == pytest.approx(give_up)


@dataclass(frozen=True)
class Caps:
    max_queue: int = 4
    max_queue_long: int = 2


# (lane, waiting in the queue (the host's), of them in the long lane) -> the hard cap refusing
QUEUE_CAPS = {
    "room in the queue": (Lane.SHORT, 3, 2, None),
    "the queue full": (Lane.SHORT, 4, 0, "queue_full"),
    "a long prompt, its lane full": (Lane.LONG, 2, 2, "long_queue_full"),
    "a short prompt is not held by the long lane": (Lane.SHORT, 2, 2, None),
    "full beats the lane": (Lane.LONG, 4, 2, "queue_full"),
}


@pytest.mark.parametrize(
    ("lane", "queued", "long", "cap"), QUEUE_CAPS.values(), ids=QUEUE_CAPS.keys()
)
def test_queue_caps(lane: Lane, queued: int, long: int, cap: str | None) -> None:
    assert queue_cap(Caps(), lane, queued, long) == cap
