"""Waiting for a condition in tests, instead of yielding a fixed number of times.

``until(condition)`` checks ``condition()`` and, while it is false, yields to the event loop
(``asyncio.sleep(0)``: the callbacks and tasks that are ready run before the next check), until
it holds or ``timeout_s`` of the loop's monotonic clock have passed; then it fails, naming
what never happened (``what``, or the condition's name and line). Nothing sleeps: a check
costs one loop turn, so a test waits exactly as long as the state takes to get there.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

TIMEOUT_S = 5.0


def _describe(condition: Callable[[], object]) -> str:
    code = getattr(condition, "__code__", None)
    name = getattr(condition, "__qualname__", repr(condition))
    return f"{name} (line {code.co_firstlineno})" if code is not None else name


async def until(
    condition: Callable[[], object], *, timeout_s: float = TIMEOUT_S, what: str | None = None
) -> None:
    """Return once ``condition()`` is true; fail if it is still false after ``timeout_s``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    turns = 0
    while not condition():
        if loop.time() >= deadline:
            raise AssertionError(
                f"never true within {timeout_s:g} s ({turns} loop turns): "
                f"{what or _describe(condition)}"
            )
        await asyncio.sleep(0)
        turns += 1


def until_written(
    condition: Callable[[], object], *, timeout_s: float = TIMEOUT_S, poll_s: float = 0.02
) -> None:
    """For a test outside an event loop that waits on another process's writes (a log file
    written in batches): check ``condition()`` every ``poll_s`` until it holds; fail after
    ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() >= deadline:
            raise AssertionError(f"never true within {timeout_s:g} s: {_describe(condition)}")
        time.sleep(poll_s)
