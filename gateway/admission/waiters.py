"""Who waits in a pool's queue, and which waiters a re-check refuses.

A waiter carries what it was admitted on: its time limits (``rules.Times``), its replica's
predicted TTFT when it joined, and its uncalibrated expected wait (which calibrates
``hold.py``). ``due`` is the re-check's choice, pure: walking the queue in order with each
place's expected wait for a slot, a waiter whose expected dispatch is past its give-up time
(``rules.give_up_at``: its deadline; while the pool is saturated, its objective) is refused;
it then frees its place, so the waiters behind it move up. Critical waiters are never
refused here (a waiter ``due`` against its objective also keeps a saturated pool saturated,
``saturation.py``). ``missed``: a waiter at the head of the queue whose objective passed
while the pool is saturated is refused, not dispatched late.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gateway.admission.decision import AdmissionRequest
from gateway.admission.queue import Priority, Ticket
from gateway.admission.rules import DEADLINE, OBJECTIVE, Times, give_up_at


@dataclass(slots=True)
class Waiter:
    granted: asyncio.Future[str | None]
    prefill: float
    request: AdmissionRequest
    times: Times
    backend_s: float  # the replica's predicted TTFT when it joined
    expected_s: float  # uncalibrated wait when it joined (``HoldTimes.expected_s``)

    def missed(self, now: float, wait: float) -> str:
        """Which limit it misses with ``wait`` still to go: its deadline, or the objective."""
        first_token = now + wait + self.backend_s
        deadline = self.times.deadline
        return DEADLINE if deadline is not None and first_token > deadline else OBJECTIVE


def ticket_of(waiter: Waiter, enqueued_at: float) -> Ticket:
    """The queue's ticket for ``waiter``: filed under its give-up time outside saturation."""
    request = waiter.request
    return Ticket(
        priority=request.priority,
        lane=request.lane,
        cost=request.cost,
        deadline=give_up_at(waiter.times, waiter.backend_s, saturated=False),
        enqueued_at=enqueued_at,
        payload=waiter,
        arrival=waiter.times.arrival,
    )


def waiter_of(ticket: Ticket) -> Waiter:
    waiter = ticket.payload
    assert isinstance(waiter, Waiter)
    return waiter


def due(
    tickets: Sequence[Ticket], waits: Sequence[float], now: float, saturated: bool
) -> list[tuple[Ticket, float]]:
    """The waiters to refuse, each with the wait it still had ahead; ``waits[i]``: the
    expected wait of the ``i``-th place of the queue."""
    refused, position = [], 0
    for ticket in tickets:
        waiter = waiter_of(ticket)
        give_up = give_up_at(waiter.times, waiter.backend_s, saturated)
        if give_up is not None and ticket.priority is not Priority.CRITICAL:
            wait = waits[position]
            if now + wait > give_up:
                refused.append((ticket, wait))
                continue
        position += 1
    return refused


def missed(ticket: Ticket, now: float) -> bool:
    """Its first token, dispatched now, comes past its give-up time while saturated."""
    waiter = waiter_of(ticket)
    give_up = give_up_at(waiter.times, waiter.backend_s, saturated=True)
    return ticket.priority is not Priority.CRITICAL and give_up is not None and now > give_up


async def wait_for_slot(
    granted: asyncio.Future[str | None],
    ticket: Ticket,
    clock: Callable[[], float],
    gave_up: Callable[[Ticket], Exception],
) -> None:
    """Wait for the slot (or the refusal) the queue decides; at the ticket's give-up time,
    raise ``gave_up(ticket)`` instead, unless the decision came just then."""
    if ticket.deadline is None:
        await granted
        return
    try:
        async with asyncio.timeout(max(0.0, ticket.deadline - clock())):
            await asyncio.shield(granted)
    except TimeoutError:
        if granted.done() and not granted.cancelled():
            granted.result()  # decided just as time ran out: a slot, or a refusal
            return
        raise gave_up(ticket) from None
