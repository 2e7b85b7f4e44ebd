"""A pool's slots held by the host's workers together (two board attachments stand for two
workers; the board itself is tested in tests/unit/host)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from gateway.admission.controller import PoolAdmission
from gateway.admission.decision import AdmissionRequest
from gateway.admission.host_slots import ALONE
from gateway.admission.queue import Lane, Priority
from gateway.host.board import Board
from gateway.host.shares import PoolShare
from tests.support.waiting import until
from tests.unit.admission.pools import Clock, pool_admission

REQUEST = AdmissionRequest(Priority.STANDARD, Lane.SHORT, 100.0, None, False)


def _two_workers(
    tmp_path: Path, slots: int, clock: Clock, woken: list[str] | None = None
) -> tuple[PoolAdmission, PoolAdmission]:
    first = Board.create(tmp_path, rows=2, slots=16)
    second = Board.attach(tmp_path)
    first.claim_row(1)
    second.claim_row(1)
    wake = (lambda: woken.append("b")) if woken is not None else None
    a = pool_admission(slots=slots, clock=clock, host=PoolShare(first, "p"))
    b = pool_admission(slots=slots, clock=clock, host=PoolShare(second, "p", wake))
    return a, b


async def test_a_slot_held_by_one_worker_is_not_free_for_another(tmp_path: Path) -> None:
    woken: list[str] = []
    a, b = _two_workers(tmp_path, slots=2, clock=Clock(), woken=woken)
    held = [await a.acquire(REQUEST), await b.acquire(REQUEST)]
    assert (a.inflight, b.inflight, a.host.held(), b.host.held()) == (1, 1, 1, 1)
    waiter = asyncio.create_task(b.acquire(REQUEST))
    await until(lambda: len(b.queue) == 1, what="the third request waits: the host is full")
    assert woken == ["b"]  # its worker was told to watch its siblings' releases
    b.publish()  # the tick shows the same queue: no new wake (that would spin the tick)
    assert woken == ["b"]
    assert a.predict(REQUEST).wait_s > 0  # the other worker sees no free slot either
    held[0].release(latency_s=0.1, dropped=False)  # a's slot frees; a has nobody waiting
    await asyncio.sleep(0)
    assert not waiter.done()  # nothing in b saw it yet
    b.dispatch()  # b's tick
    permit = await asyncio.wait_for(waiter, 1)
    assert (a.inflight, b.inflight) == (0, 2)
    for p in (permit, held[1]):
        p.release(latency_s=0.1, dropped=False)
    assert a.host.held() == 0


async def test_the_only_slot_goes_to_one_worker_at_a_time(tmp_path: Path) -> None:
    a, b = _two_workers(tmp_path, slots=1, clock=Clock())
    first = await a.acquire(REQUEST)
    second = asyncio.create_task(b.acquire(REQUEST))
    await until(lambda: len(b.queue) == 1, what="the other worker waits")
    first.release(latency_s=0.1, dropped=False)
    b.dispatch()
    (await second).release(latency_s=0.1, dropped=False)


def test_saturation_weighs_the_hosts_arrivals(tmp_path: Path) -> None:
    clock = Clock()
    a, b = _two_workers(tmp_path, slots=1, clock=clock)
    for _ in range(10):
        a.arrived(100.0)
    a.publish()
    alone = pool_admission(slots=1, clock=clock)
    assert b.state().arrivals_per_s == pytest.approx(5.0)  # 10 arrivals over tau = 2 s
    assert alone.state().arrivals_per_s == 0.0
    clock.now += 2.0  # decayed on the reader's clock
    assert b.state().arrivals_per_s == pytest.approx(5.0 / 2.718281828, rel=1e-6)


def test_alone_has_nothing_elsewhere() -> None:
    with ALONE.locked():
        assert (ALONE.held(), ALONE.queued(), ALONE.rates(1.0, 2.0)) == (0, 0, (0.0, 0.0))


async def test_the_queue_cap_counts_the_siblings_waiters(tmp_path: Path) -> None:
    a, b = _two_workers(tmp_path, slots=1, clock=Clock())
    a.settings = a.settings.model_copy(update={"max_queue": 1, "objective": None})
    b.settings = b.settings.model_copy(update={"max_queue": 1, "objective": None})
    held = await a.acquire(REQUEST)
    waiter = asyncio.create_task(b.acquire(REQUEST))
    await until(lambda: len(b.queue) == 1, what="one waits in the other worker")
    assert a.check(REQUEST).refuse == "queue_full"  # the host's queue is full
    waiter.cancel()
    held.release(latency_s=0.1, dropped=False)


def _request(clock: Clock) -> AdmissionRequest:
    return AdmissionRequest(Priority.STANDARD, Lane.SHORT, 100.0, None, False, arrival=clock.now)


async def test_the_hosts_first_waiter_gets_a_freed_slot_whichever_worker_frees_it(
    tmp_path: Path,
) -> None:
    clock = Clock()
    a, b = _two_workers(tmp_path, slots=1, clock=clock)
    held = await a.acquire(_request(clock))
    clock.now += 1.0
    first = asyncio.create_task(b.acquire(_request(clock)))  # waits in b
    await until(lambda: len(b.queue) == 1, what="b's waiter")
    clock.now += 1.0
    assert a.predict(_request(clock)).wait_s > 0  # a's new request sees the host's queue
    later = asyncio.create_task(a.acquire(_request(clock)))  # waits in a, behind b's
    await until(lambda: len(a.queue) == 1, what="a's waiter")
    held.release(latency_s=0.1, dropped=False)  # a frees the slot: b's waiter is first
    await asyncio.sleep(0)
    assert not later.done()
    assert a.inflight == 0
    clock.now += 1.0  # a newcomer does not take the free slot the host's waiters wait for
    newcomer = asyncio.create_task(a.acquire(_request(clock)))
    await until(lambda: len(a.queue) == 2, what="the newcomer waits behind them")
    b.dispatch()  # b's tick
    permit = await asyncio.wait_for(first, 1)
    permit.release(latency_s=0.1, dropped=False)  # b frees it: a's waiter is the host's first
    a.dispatch()
    (await asyncio.wait_for(later, 1)).release(latency_s=0.1, dropped=False)
    (await asyncio.wait_for(newcomer, 1)).release(latency_s=0.1, dropped=False)
    assert (a.host.queued(), b.host.queued()) == (0, 0)  # both queues shown empty again
