"""``until``: returns as soon as the condition holds, fails clearly when it never does."""

from __future__ import annotations

import asyncio

import pytest

from tests.support.waiting import until


async def test_a_condition_already_true_returns_without_yielding() -> None:
    ran: list[str] = []
    asyncio.get_running_loop().call_soon(ran.append, "callback")
    await until(lambda: True)
    assert ran == []  # no loop turn was taken


async def test_it_waits_as_many_turns_as_the_state_needs() -> None:
    steps: list[int] = []

    async def work() -> None:
        for i in range(50):  # more turns than any fixed count the old helpers yielded
            steps.append(i)
            await asyncio.sleep(0)

    task = asyncio.create_task(work())
    await until(lambda: len(steps) == 50)
    assert steps == list(range(50))
    await task


async def test_a_condition_that_never_holds_fails_with_what_it_waited_for() -> None:
    with pytest.raises(AssertionError, match=r"never true within 0\.05 s .*: the queue empties"):
        await until(lambda: False, timeout_s=0.05, what="the queue empties")


async def test_without_a_description_the_condition_is_named_by_its_line() -> None:
    def nothing_yet() -> bool:
        return False

    with pytest.raises(AssertionError, match=r"nothing_yet \(line \d+\)"):
        await until(nothing_yet, timeout_s=0.01)
