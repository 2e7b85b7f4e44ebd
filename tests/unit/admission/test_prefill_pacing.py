"""Prefill pacing in a pool's admission: prompt tokens admitted but not yet past their first
token stay under the budget; first tokens and releases let the next waiters in. No sleeps:
each step waits for the state it needs (``tests.support.waiting.until``)."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import CollectorRegistry

from gateway.admission.controller import Permit, PoolAdmission
from gateway.admission.decision import AdmissionRequest
from gateway.admission.prefill import PrefillBudget
from gateway.admission.queue import Lane, Priority
from gateway.metrics import GatewayMetrics
from gateway.policy import load_policy_text
from tests.support.waiting import until
from tests.unit.admission.test_lease_pump import FakeGate


def _pool(budget: int | None, gate: FakeGate | None = None) -> PoolAdmission:
    pacing = "" if budget is None else f"\n    admission: {{max_prefill_tokens: {budget}}}"
    policy = load_policy_text(
        f"""
backends:
  - {{name: b0, url: "http://127.0.0.1:1", model: m, pool: p, max_inflight: 16}}
models:
  fast: {{pool: p}}
pools:
  p:{pacing or " {}"}
"""
    )
    return PoolAdmission(
        policy.pools["p"],
        clock=lambda: 0.0,
        metrics=GatewayMetrics(CollectorRegistry()),
        leases=gate,
    )


def _req(prompt: float) -> AdmissionRequest:
    return AdmissionRequest(Priority.STANDARD, Lane.SHORT, prompt + 100, None, False, prompt)


# id -> (budget, in flight, has room)
ROOM = {
    "off": (None, 10**9, True),
    "empty": (1000, 0, True),
    "under": (1000, 999, True),
    "at the budget": (1000, 1000, False),
    "over (one big prompt)": (1000, 5000, False),
}


@pytest.mark.parametrize(("limit", "in_flight", "room"), ROOM.values(), ids=ROOM)
def test_budget_room(limit: int | None, in_flight: float, room: bool) -> None:
    assert PrefillBudget(limit, in_flight).has_room() is room


def test_done_never_goes_negative() -> None:
    budget = PrefillBudget(10, 5)
    budget.done(8)
    assert budget.in_flight == 0.0


async def test_waiters_enter_as_first_tokens_arrive() -> None:
    pool = _pool(1000)
    first = await pool.acquire(_req(600))
    second = await pool.acquire(_req(600))  # 600 < 1000: room, overshoots to 1200
    third = asyncio.ensure_future(pool.acquire(_req(600)))
    await until(lambda: len(pool.queue) == 1, what="the third waits in the queue")
    assert not third.done()
    assert pool.prefill.in_flight == 1200
    first.prefilled()  # 600 left: room again
    await until(third.done)
    assert third.done()
    assert pool.prefill.in_flight == 1200
    assert pool.inflight == 3  # slots are held until release, whatever the prefill
    second.release(latency_s=0.1, dropped=False)  # never saw a first token: freed at the end
    third.result().release(latency_s=0.1, dropped=False)
    first.release(latency_s=0.1, dropped=False)
    assert pool.prefill.in_flight == 0.0
    assert pool.inflight == 0


async def test_a_prompt_longer_than_the_budget_runs_alone() -> None:
    pool = _pool(1000)
    big = await pool.acquire(_req(5000))
    small = asyncio.ensure_future(pool.acquire(_req(10)))
    await until(lambda: len(pool.queue) == 1, what="the small one waits in the queue")
    assert not small.done()
    big.prefilled()
    await until(small.done)
    assert small.done()


async def test_prefilled_twice_counts_once() -> None:
    pool = _pool(1000)
    permit: Permit = await pool.acquire(_req(900))
    other = await pool.acquire(_req(50))
    permit.prefilled()
    permit.prefilled()
    permit.release(latency_s=None, dropped=False)
    assert pool.prefill.in_flight == 50
    other.release(latency_s=None, dropped=False)


async def test_without_pacing_nothing_waits_on_prompts() -> None:
    pool = _pool(None)
    permits = [await pool.acquire(_req(10**6)) for _ in range(5)]
    assert pool.inflight == 5
    for p in permits:
        p.release(latency_s=None, dropped=False)


async def test_a_full_budget_means_a_wait_estimate_and_queue_caps() -> None:
    pool = _pool(100)
    await pool.acquire(_req(200))
    assert pool.predict(_req(10)).wait_s != 0.0  # no free slot while the budget is full


async def test_pacing_with_a_lease_gate() -> None:
    gate = FakeGate(room=10)
    pool = _pool(1000, gate)
    first = await pool.acquire(_req(1000))
    waiting = asyncio.ensure_future(pool.acquire(_req(10)))
    await until(lambda: len(pool.queue) == 1, what="the second waits in the queue")
    assert not waiting.done()
    first.prefilled()  # wakes the lease pump
    await until(waiting.done)
    assert waiting.done()
    waiting.result().release(latency_s=None, dropped=False)
    first.release(latency_s=None, dropped=False)
    await until(lambda: not gate.tasks, what="the lease pump stops")
    assert gate.held == set()
