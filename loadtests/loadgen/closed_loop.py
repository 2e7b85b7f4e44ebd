"""Closed-loop streaming clients: ``concurrency`` users, each sending its next request once
the previous one has ended.

Algorithm: the plan is one shared queue of requests (their ``at_s`` is ignored); each of
``concurrency`` worker coroutines takes the next request, sends it with the open-loop
client's own ``LoadClient.send`` (the same streaming client, timings and records), waits for
its end, and takes the next, until the plan is used up. A refused user (429/503) waits the
advised ``Retry-After``, at most ``refusal_pause_cap_s``, before its next request, as a
client that backs off would (without it, refusals answered in a millisecond would turn the
loop into a refusal storm that measures nothing but the refusing). Records come back in plan
order; times are on the client's clock (``LoadClient.now``), which this function does not
reset, so several levels run with one client share one time line.

Parameters: ``concurrency`` (users), ``refusal_pause_cap_s`` (0: no pause).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Sequence

from loadtests.loadgen.client import LoadClient
from loadtests.loadgen.record import RequestRecord
from loadtests.loadgen.request import PlannedRequest


def pause_after(record: RequestRecord, cap_s: float) -> float:
    """How long a user waits after ``record`` before its next request (seconds)."""
    if not record.shed or cap_s <= 0:
        return 0.0
    try:
        advised = float(record.headers.get("retry-after", "0"))
    except ValueError:
        advised = 0.0
    return min(max(advised, 0.0), cap_s)


async def closed_loop(
    client: LoadClient,
    plan: Sequence[PlannedRequest],
    concurrency: int,
    *,
    refusal_pause_cap_s: float = 0.0,
) -> list[RequestRecord]:
    """Send ``plan`` with ``concurrency`` closed-loop users; one record per request."""
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    pending = deque(plan)
    done: dict[int, RequestRecord] = {}

    async def user() -> None:
        while pending:
            request = pending.popleft()
            record = await client.send(request)
            done[request.index] = record
            pause = pause_after(record, refusal_pause_cap_s)
            if pause > 0 and pending:
                await asyncio.sleep(pause)

    await asyncio.gather(*(user() for _ in range(min(concurrency, len(plan)))))
    return [done[r.index] for r in plan]
