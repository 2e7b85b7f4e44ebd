"""A request taken back from an engine's queue, readmitted: its slot goes back to the queue,
it waits in its place by arrival (not behind later arrivals), and its deadline still holds
(the waiter's 503 with Retry-After). A manual clock; no servers, no sleeps."""

from __future__ import annotations

import asyncio

import pytest

from gateway.admission.decision import AdmissionRequest
from gateway.admission.permit import Permit
from gateway.admission.queue import Lane, Priority
from gateway.errors import GatewayError
from tests.support.waiting import until
from tests.unit.admission.pools import Clock, pool_admission


def _req(arrival: float, deadline: float | None = None) -> AdmissionRequest:
    return AdmissionRequest(Priority.STANDARD, Lane.SHORT, 356.0, deadline, False, 100.0, arrival)


async def test_a_readmitted_request_goes_ahead_of_later_arrivals() -> None:
    clock = Clock(100.0)
    pool = pool_admission(slots=2, clock=clock, backend_s=0.1)
    a = await pool.acquire(_req(arrival=100.0))
    b = await pool.acquire(_req(arrival=100.1))
    clock.now = 101.0
    c = asyncio.ensure_future(pool.acquire(_req(arrival=101.0)))  # no slot: it waits
    await until(lambda: len(pool.queue) == 1)
    again = await a.readmit()  # a's slot is given back; a arrived first, so it takes it
    assert isinstance(again, Permit)
    assert pool.inflight == 2
    assert not c.done()
    assert again.request.arrival == 100.0
    b.release(latency_s=0.1, dropped=False)  # the next slot goes to c
    assert isinstance(await c, Permit)
    assert pool.hold.releases == 1  # only b's hold: a's slot came back unused


async def test_a_readmitted_request_waits_for_the_next_slot_in_its_place() -> None:
    clock, engines = Clock(100.0), [2]
    pool = pool_admission(slots=4, clock=clock, backend_s=0.1, engine_slots=lambda: engines[0])
    a = await pool.acquire(_req(arrival=100.0))
    b = await pool.acquire(_req(arrival=100.1))
    engines[0] = 1  # the engine showed a batch of one: a waits inside it, behind b
    clock.now = 100.5
    c = asyncio.ensure_future(pool.acquire(_req(arrival=100.5)))
    await until(lambda: len(pool.queue) == 1)
    again = asyncio.ensure_future(a.readmit())
    await until(lambda: len(pool.queue) == 2)
    assert [w.arrival for w in pool.queue.ordered()] == [100.0, 100.5]  # a first
    clock.now = 101.0
    b.release(latency_s=0.1, dropped=False)  # the next slot: a's, not c's
    assert isinstance(await again, Permit)
    assert not c.done()
    c.cancel()


async def test_past_its_deadline_a_readmitted_request_gets_the_waiters_refusal() -> None:
    clock = Clock(100.0)
    pool = pool_admission(slots=1, clock=clock, backend_s=0.1)
    a = await pool.acquire(_req(arrival=100.0, deadline=102.0))
    other = asyncio.ensure_future(pool.acquire(_req(arrival=100.2)))
    await until(lambda: len(pool.queue) == 1)
    clock.now = 102.5  # its deadline passed while it waited inside the engine
    with pytest.raises(GatewayError) as refused:
        await a.readmit()
    assert refused.value.http_status() == 503
    assert refused.value.code == "deadline_unmeetable"
    assert "retry-after" in refused.value.response_headers()
    assert isinstance(await other, Permit)  # its slot went to the next waiter


@pytest.mark.parametrize(
    ("deadline", "expected"),
    [(None, 106.0), (105.0, 105.0), (110.0, 106.0)],  # the default: 3x the 2 s objective
)
async def test_give_up_is_the_waiters_limit(deadline: float | None, expected: float) -> None:
    clock = Clock(100.0)
    pool = pool_admission(slots=1, clock=clock, backend_s=0.1)
    permit = await pool.acquire(_req(arrival=100.0, deadline=deadline))
    assert permit.give_up() == expected


async def test_a_spent_permit_cannot_be_readmitted() -> None:
    clock = Clock(100.0)
    pool = pool_admission(slots=1, clock=clock, backend_s=0.1)
    permit = await pool.acquire(_req(arrival=100.0))
    permit.release(latency_s=0.1, dropped=False)
    with pytest.raises(AssertionError):
        await permit.readmit()
