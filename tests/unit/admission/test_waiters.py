"""Which waiters a re-check refuses, by table: each place's expected wait against each
waiter's give-up time; a refused waiter frees its place for those behind it."""

from __future__ import annotations

import asyncio

import pytest

from gateway.admission.decision import AdmissionRequest
from gateway.admission.queue import Lane, Priority, Ticket
from gateway.admission.rules import DEADLINE, OBJECTIVE, Times
from gateway.admission.waiters import Waiter, due, missed


def _ticket(loop: asyncio.AbstractEventLoop, arrival: float, priority: Priority) -> Ticket:
    request = AdmissionRequest(priority, Lane.SHORT, 1.0, None, False, arrival=arrival)
    times = Times(arrival, objective_s=2.0, deadline=arrival + 6.0)
    waiter = Waiter(loop.create_future(), 0.0, request, times, backend_s=0.5, expected_s=1.0)
    return Ticket(priority, Lane.SHORT, 1.0, times.deadline, arrival, waiter)


# (arrivals and priorities of the queue in order, expected waits by place, saturated)
# -> the indexes of the waiters refused, with the wait each still had
DUE: dict[str, tuple[list[tuple[float, Priority]], list[float], bool, list[tuple[int, float]]]] = {
    "below saturation: each by its deadline only": (
        [(95.0, Priority.STANDARD), (99.0, Priority.STANDARD)],
        [1.0, 2.0],
        False,
        [(0, 1.0)],  # 100 + 1.0 + 0.5 > 95 + 6
    ),
    "saturated: by the objective; the next moves up": (
        [(99.0, Priority.STANDARD), (100.0, Priority.STANDARD), (100.0, Priority.STANDARD)],
        [1.0, 1.6, 3.0],
        True,
        [(0, 1.0), (2, 1.6)],  # the first misses; the second moves up; the third misses
    ),
    "critical waiters are never refused here": (
        [(90.0, Priority.CRITICAL), (100.0, Priority.STANDARD)],
        [0.5, 1.0],
        True,
        [],
    ),
}


@pytest.mark.parametrize(("queue", "waits", "saturated", "refused"), DUE.values(), ids=DUE.keys())
async def test_due(
    queue: list[tuple[float, Priority]],
    waits: list[float],
    saturated: bool,
    refused: list[tuple[int, float]],
) -> None:
    loop = asyncio.get_running_loop()
    tickets = [_ticket(loop, arrival, priority) for arrival, priority in queue]
    found = due(tickets, waits, now=100.0, saturated=saturated)
    assert [(tickets.index(t), wait) for t, wait in found] == refused


def test_a_waiter_says_which_limit_it_missed() -> None:
    loop = asyncio.new_event_loop()
    try:
        waiter = _ticket(loop, 100.0, Priority.STANDARD).payload
        assert isinstance(waiter, Waiter)
        assert waiter.missed(now=101.0, wait=1.0) == OBJECTIVE  # 102.5, before 106
        assert waiter.missed(now=105.0, wait=1.0) == DEADLINE  # 106.5
    finally:
        loop.close()


# (arrival, priority, now) -> whether a waiter dispatched now misses its objective (2 s;
# its replica's first token 0.5 s after dispatch): a saturated pool refuses it instead
MISSED = {
    "its first token still within the objective": (100.0, Priority.STANDARD, 101.4, False),
    "its objective passes before its first token": (100.0, Priority.STANDARD, 101.6, True),
    "critical: never": (100.0, Priority.CRITICAL, 110.0, False),
}


@pytest.mark.parametrize(("arrival", "priority", "now", "late"), MISSED.values(), ids=MISSED.keys())
async def test_missed(arrival: float, priority: Priority, now: float, late: bool) -> None:
    ticket = _ticket(asyncio.get_running_loop(), arrival, priority)
    assert missed(ticket, now) is late
