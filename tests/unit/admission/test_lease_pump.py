"""A pool's admission with a lease gate (cluster admission), on a fake gate: no Redis, no
sleeps. The pump's poll is set to an hour, so only real wake-ups move it."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Coroutine
from typing import Any

from prometheus_client import CollectorRegistry

from gateway.admission.controller import Permit, PoolAdmission
from gateway.admission.decision import AdmissionRequest
from gateway.admission.queue import Lane, Priority
from gateway.metrics import GatewayMetrics
from gateway.policy import load_policy_text
from tests.support.waiting import until


class FakeGate:
    """``room`` leases in the whole cluster; ``local_cap`` mimics the local fallback."""

    poll_s = 3600.0

    def __init__(self, room: int, local_cap: int | None = None) -> None:
        self.room = room
        self.local_cap = local_cap
        self.held: set[str] = set()
        self.tasks: set[asyncio.Task[None]] = set()
        self._ids = itertools.count()

    def cap(self, limit: int) -> int:
        return limit if self.local_cap is None else self.local_cap

    def may_try(self, limit: int) -> bool:
        return len(self.held) < self.room

    async def acquire(self, limit: int) -> str | None:
        if len(self.held) >= self.room:
            return None
        lease = f"l{next(self._ids)}"
        self.held.add(lease)
        return lease

    def release(self, lease: str, then: Callable[[], None]) -> None:
        self.held.discard(lease)
        then()

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)


def _pool(gate: FakeGate, limit: int = 4) -> PoolAdmission:
    policy = load_policy_text(
        f"""
backends:
  - {{name: b0, url: "http://127.0.0.1:1", model: m, pool: p, max_inflight: {limit}}}
models:
  fast: {{pool: p}}
"""
    )
    return PoolAdmission(
        policy.pools["p"],
        clock=lambda: 100.0,
        metrics=GatewayMetrics(CollectorRegistry()),
        leases=gate,
    )


def _req(priority: Priority = Priority.STANDARD) -> AdmissionRequest:
    return AdmissionRequest(priority, Lane.SHORT, 10.0, None, degradable=False)


def _free(permit: Permit) -> None:
    permit.release(latency_s=0.1, dropped=False)


async def test_cluster_leases_go_to_waiters_in_priority_order() -> None:
    gate = FakeGate(room=1)
    pool = _pool(gate)
    first = await pool.acquire(_req())  # a free local slot and a lease: at once
    assert first.queued_s == 0.0
    assert gate.held != set()
    order: list[str] = []
    permits: dict[str, Permit] = {}

    async def wait(name: str, priority: Priority) -> None:
        permits[name] = await pool.acquire(_req(priority))
        order.append(name)

    waiters = [
        asyncio.create_task(wait("sheddable", Priority.SHEDDABLE)),
        asyncio.create_task(wait("standard", Priority.STANDARD)),
        asyncio.create_task(wait("critical", Priority.CRITICAL)),
    ]
    await until(lambda: len(pool.queue) == 3, what="the three wait in the queue")
    assert order == []  # the local limit (4) has room, the cluster (1) has none
    assert len(pool.queue) == 3
    _free(first)
    await until(lambda: order, what="a waiter gets the lease")
    assert order == ["critical"]
    for name, admitted in (("critical", 2), ("standard", 3)):
        _free(permits[name])
        await until(lambda n=admitted: len(order) == n, what=f"the lease {name} gave back is used")
    await asyncio.gather(*waiters)
    assert order == ["critical", "standard", "sheddable"]
    _free(permits["sheddable"])
    await until(lambda: not gate.tasks, what="the pump stops")
    assert (pool.inflight, gate.held, gate.tasks) == (0, set(), set())  # the pump stopped


async def test_the_local_share_caps_the_pool_while_redis_is_down() -> None:
    gate = FakeGate(room=100, local_cap=2)
    pool = _pool(gate, limit=4)
    permits = [await pool.acquire(_req()) for _ in range(2)]
    third = asyncio.create_task(pool.acquire(_req()))
    await until(lambda: len(pool.queue) == 1, what="the third waits in the queue")
    assert not third.done()
    assert pool.inflight == 2
    _free(permits[0])
    await until(third.done)
    assert third.done()
    assert pool.inflight == 2


async def test_a_lease_nobody_waits_for_any_more_goes_back() -> None:
    gate = FakeGate(room=1)
    pool = _pool(gate)
    first = await pool.acquire(_req())
    leaving = asyncio.create_task(pool.acquire(_req()))
    await until(lambda: len(pool.queue) == 1, what="the second waits in the queue")
    leaving.cancel()
    await until(leaving.done)
    _free(first)
    await until(lambda: not gate.tasks, what="the pump stops")
    assert (pool.inflight, len(pool.queue), gate.held) == (0, 0, set())


async def test_a_full_cluster_makes_the_pool_full_for_wait_estimates() -> None:
    gate = FakeGate(room=1)
    pool = _pool(gate)
    assert pool.predict(_req()).wait_s == 0.0
    permit = await pool.acquire(_req())
    # Local slots are free, but the cluster is known full: no "wait 0" promise; the hold
    # time decides (its conservative prior before anything completed).
    assert pool.predict(_req()).wait_s > 0.0
    _free(permit)
    await until(lambda: not gate.tasks, what="the pump stops")
    assert pool.predict(_req()).wait_s == 0.0
