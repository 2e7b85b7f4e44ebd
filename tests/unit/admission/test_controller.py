"""Admission enforcement for one pool, on a manual clock (no servers, no sleeps)."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import CollectorRegistry

from gateway.admission.controller import PoolAdmission
from gateway.admission.decision import AdmissionRequest
from gateway.admission.queue import Lane, Priority
from gateway.errors import GatewayError
from gateway.metrics import GatewayMetrics
from gateway.policy import load_policy_text
from tests.support.waiting import until
from tests.unit.admission.pools import Clock, pool_admission

# The mechanics below (queue order, handover, caps, ladder) without the TTFT objective; the
# objective's decisions are tested in test_slo.py.
NO_OBJECTIVE = "{objective: null}"


def _pool(
    admission: str = NO_OBJECTIVE, inflight: int = 1, clock: Clock | None = None
) -> PoolAdmission:
    return pool_admission(slots=inflight, clock=clock or Clock(), admission=admission)


def _refusal(pool: PoolAdmission, request: AdmissionRequest) -> GatewayError | None:
    decision = pool.check(request)
    return None if decision.refuse is None else pool.refusal(request, decision)


def _req(
    priority: Priority = Priority.STANDARD,
    lane: Lane = Lane.SHORT,
    cost: float = 100.0,
    deadline: float | None = None,
    degradable: bool = False,
) -> AdmissionRequest:
    return AdmissionRequest(priority, lane, cost, deadline, degradable)


async def test_free_slot_then_queue_then_handover() -> None:
    pool = _pool(inflight=1)
    first = await pool.acquire(_req())
    assert first.queued_s == 0.0
    waiter = asyncio.create_task(pool.acquire(_req()))
    await until(lambda: len(pool.queue) == 1, what="the second request waits in the queue")
    assert not waiter.done()
    assert len(pool.queue) == 1
    first.release(latency_s=0.1, dropped=False)
    second = await asyncio.wait_for(waiter, 1)
    assert pool.inflight == 1
    second.release(latency_s=0.1, dropped=False)
    assert pool.inflight == 0


async def test_priority_orders_the_queue() -> None:
    pool = _pool(inflight=1)
    holder = await pool.acquire(_req())
    order: list[str] = []

    async def wait(name: str, priority: Priority) -> None:
        permit = await pool.acquire(_req(priority))
        order.append(name)
        permit.release(latency_s=0.1, dropped=False)

    tasks = [
        asyncio.create_task(wait("sheddable", Priority.SHEDDABLE)),
        asyncio.create_task(wait("standard", Priority.STANDARD)),
        asyncio.create_task(wait("critical", Priority.CRITICAL)),
    ]
    await until(lambda: len(pool.queue) == 3, what="the three wait in the queue")
    holder.release(latency_s=0.1, dropped=False)
    await asyncio.wait_for(asyncio.gather(*tasks), 1)
    assert order == ["critical", "standard", "sheddable"]


async def test_hard_queue_cap_sheds_every_priority() -> None:
    pool = _pool("{objective: null, max_queue: 1}", inflight=1)
    holder = await pool.acquire(_req())
    waiter = asyncio.create_task(pool.acquire(_req()))
    await until(lambda: len(pool.queue) == 1, what="the waiter fills the queue")
    error = _refusal(pool, _req(Priority.CRITICAL))
    assert error is not None
    assert error.http_status() == 503
    assert error.code == "queue_full"
    assert int(error.response_headers()["retry-after"]) >= 1
    holder.release(latency_s=0.1, dropped=False)
    (await waiter).release(latency_s=0.1, dropped=False)


async def test_a_waiter_that_leaves_frees_its_place() -> None:
    pool = _pool(inflight=1)
    holder = await pool.acquire(_req())
    waiter = asyncio.create_task(pool.acquire(_req()))
    await until(lambda: len(pool.queue) == 1, what="the waiter waits in the queue")
    waiter.cancel()
    await until(waiter.done)
    assert len(pool.queue) == 0
    holder.release(latency_s=0.1, dropped=False)
    assert pool.inflight == 0


async def test_deadline_passing_in_the_queue_is_a_503_with_retry_after() -> None:
    clock = Clock()
    pool = _pool(inflight=1, clock=clock)
    holder = await pool.acquire(_req())
    with pytest.raises(GatewayError) as info:
        # Met by no prediction yet made (a fresh pool predicts no wait for the first waiter's
        # check below), the give-up time passes while it waits: refused, not timed out.
        await pool.acquire(_req(deadline=clock.now + 0.01), pool.check(_req()))
    assert info.value.http_status() == 503
    assert info.value.code == "deadline_unmeetable"
    assert int(info.value.response_headers()["retry-after"]) >= 1
    assert len(pool.queue) == 0
    holder.release(latency_s=0.1, dropped=False)


async def test_unmeetable_deadline_and_long_wait_are_refused_at_once() -> None:
    clock = Clock()
    pool = _pool("{objective: null, max_wait_s: 5}", inflight=1, clock=clock)
    for _ in range(3):  # teach the hold time: 2 s per request
        permit = await pool.acquire(_req())
        clock.now += 2.0
        permit.release(latency_s=0.1, dropped=False)
    holder = await pool.acquire(_req())
    waiters = [asyncio.create_task(pool.acquire(_req(cost=200))) for _ in range(4)]
    await until(lambda: len(pool.queue) == 4, what="the four wait in the queue")
    assert pool.predict(_req()).wait_s == pytest.approx(10.0)  # 5 places x 2 s
    error = _refusal(pool, _req(deadline=clock.now + 1))
    assert error is not None
    assert error.code == "deadline_unmeetable"
    error = _refusal(pool, _req())
    assert error is not None
    assert error.code == "wait_too_long"
    assert float(error.response_headers()["retry-after"]) >= 10
    assert _refusal(pool, _req(Priority.CRITICAL)) is None  # critical: hard caps only
    for task in waiters:
        task.cancel()
    holder.release(latency_s=0.1, dropped=False)


async def test_ladder_sheds_by_priority_and_degrades_auto_requests() -> None:
    ladder = (
        "{objective: null, degrade_to: q, ladder: [{action: degrade, queue_depth: 1},"
        " {action: shed_sheddable, queue_depth: 2}]}"
    )
    policy = load_policy_text(
        f"""
backends:
  - {{name: b0, url: "http://127.0.0.1:1", model: m, pool: p, max_inflight: 1}}
  - {{name: b1, url: "http://127.0.0.1:2", model: m, pool: q}}
models:
  fast: {{pool: p}}
pools:
  p: {{admission: {ladder}}}
"""
    )
    pool = PoolAdmission(
        policy.pools["p"],
        clock=Clock(),
        metrics=GatewayMetrics(CollectorRegistry()),
    )
    holder = await pool.acquire(_req())
    assert pool.check(_req(degradable=True)).degrade_to is None
    waiters = [asyncio.create_task(pool.acquire(_req())) for _ in range(2)]
    await until(lambda: len(pool.queue) == 2, what="the two wait in the queue")
    assert pool.check(_req(degradable=True)).degrade_to == "q"
    assert pool.check(_req(degradable=False)).degrade_to is None
    assert pool.check(_req(Priority.SHEDDABLE)).refuse == "overload_step_2"
    assert pool.check(_req(Priority.CRITICAL)).refuse is None
    for task in waiters:
        task.cancel()
    holder.release(latency_s=0.1, dropped=False)
