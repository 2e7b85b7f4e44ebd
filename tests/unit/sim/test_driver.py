"""The async driver on a virtual clock: no real sleeps, exact simulated timestamps."""

from __future__ import annotations

import asyncio

import pytest

from loadtests.sim.driver import EngineDriver, RequestAborted
from loadtests.sim.engine import Engine
from loadtests.sim.profile import StepTime

from .conftest import make_profile, req, tokens


class VirtualClock:
    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t

    async def sleep_until(self, t: float) -> None:
        self.t = max(self.t, t)
        await asyncio.sleep(0)


async def test_driver_streams_tokens_at_simulated_times() -> None:
    step = StepTime(base_s=0.02, per_prefill_token_s=0.0, per_running_seq_s=0.0,
                    per_context_token_s=0.0)  # fmt: skip
    clock = VirtualClock()
    driver = EngineDriver(Engine(make_profile(step_time=step)), clock)
    task = asyncio.create_task(driver.run())
    try:
        stream = driver.submit(req("a", tokens(0, 10), 3))
        outs = [o async for o in stream.outputs()]
    finally:
        task.cancel()
    assert [o.new_tokens for o in outs] == [1, 1, 1]
    assert outs[-1].finish_reason == "length"
    assert stream.first_token == pytest.approx(0.02)
    assert stream.last_token == pytest.approx(0.06)


async def test_abort_wakes_waiters_and_drops_outputs() -> None:
    clock = VirtualClock()
    engine = Engine(make_profile())
    driver = EngineDriver(engine, clock)
    task = asyncio.create_task(driver.run())
    try:
        stream = driver.submit(req("a", tokens(0, 10), 1000))
        await driver.wait_until(lambda: stream.completion_tokens >= 3)
        assert driver.abort("a")
        await driver.wait_until(lambda: engine.num_running == 0)
    finally:
        task.cancel()
    assert engine.counters.aborts == 1
    assert engine.kv.num_free == engine.kv.num_blocks


async def test_abort_wakes_a_consumer_waiting_for_outputs() -> None:
    clock = VirtualClock()
    engine = Engine(make_profile(max_num_seqs=1))
    driver = EngineDriver(engine, clock)
    task = asyncio.create_task(driver.run())
    try:
        driver.submit(req("a", tokens(0, 10), 1000))
        queued = driver.submit(req("b", tokens(100, 10), 1000))
        await driver.wait_until(lambda: engine.num_running == 1 and engine.num_waiting == 1)

        async def consume() -> int:
            return sum([o.new_tokens async for o in queued.outputs()])

        consumer = asyncio.create_task(consume())
        await asyncio.sleep(0)  # let the consumer block on the empty queue
        assert driver.abort("b")
        with pytest.raises(RequestAborted):
            await consumer
        assert queued.aborted
        assert engine.num_waiting == 0
        assert not driver.abort("b")
    finally:
        task.cancel()
