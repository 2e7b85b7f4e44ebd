"""Closed-loop users: never more requests in flight than users, every request sent once, a
refused user's pause from its Retry-After."""

from __future__ import annotations

import asyncio

import httpx2 as httpx
import pytest

from loadtests.loadgen.client import ClientConfig, LoadClient, Target
from loadtests.loadgen.closed_loop import closed_loop, pause_after
from loadtests.loadgen.record import RequestRecord
from loadtests.loadgen.request import PlannedRequest

SSE = b'data: {"choices":[{"delta":{"content":"x"}}]}\n\ndata: [DONE]\n\n'


def _plan(n: int) -> list[PlannedRequest]:
    return [PlannedRequest(i, 0.0, "x", "m", [{"role": "user", "content": str(i)}], 4, 0.0)
            for i in range(n)]  # fmt: skip


class _Server:
    """Counts requests in flight; refuses the ones whose prompt is in ``refuse``."""

    def __init__(self, refuse: frozenset[str] = frozenset()) -> None:
        self.inflight = 0
        self.most = 0
        self.seen: list[str] = []
        self._refuse = refuse

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        prompt = request.read().decode().split('"content":"')[1].split('"')[0]
        self.seen.append(prompt)
        self.inflight += 1
        self.most = max(self.most, self.inflight)
        for _ in range(5):  # let every other user get as far as it can
            await asyncio.sleep(0)
        self.inflight -= 1
        if prompt in self._refuse:
            return httpx.Response(503, headers={"retry-after": "0"}, json={"error": {}})
        return httpx.Response(200, content=SSE, headers={"content-type": "text/event-stream"})


async def _run(server: _Server, plan: list[PlannedRequest], users: int) -> list[RequestRecord]:
    client = LoadClient(ClientConfig(targets=[Target("http://sim")]),
                        transport=httpx.MockTransport(server))  # fmt: skip
    try:
        return await closed_loop(client, plan, users)
    finally:
        await client.aclose()


@pytest.mark.parametrize(("users", "requests"), [(1, 5), (3, 10), (8, 8), (20, 6)])
async def test_never_more_in_flight_than_users(users: int, requests: int) -> None:
    server = _Server(refuse=frozenset({"2"}))
    records = await _run(server, _plan(requests), users)
    assert server.most == min(users, requests)
    assert sorted(server.seen, key=int) == [str(i) for i in range(requests)]
    assert [r.index for r in records] == list(range(requests))
    assert [r.status for r in records] == [503 if i == 2 else 200 for i in range(requests)]
    assert all(r.ttft_s is not None for r in records if r.ok)


async def test_a_closed_loop_needs_a_user() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        await _run(_Server(), _plan(2), 0)


def _refused(status: int, retry_after: str | None) -> RequestRecord:
    headers = {} if retry_after is None else {"retry-after": retry_after}
    return RequestRecord(0, "x", "t", 0.0, status=status, headers=headers)


@pytest.mark.parametrize(
    ("status", "retry_after", "cap", "pause"),
    [
        (503, "3", 1.0, 1.0),  # capped
        (503, "0.4", 1.0, 0.4),
        (429, "2", 5.0, 2.0),
        (503, None, 1.0, 0.0),  # no advice: at once
        (503, "soon", 1.0, 0.0),
        (503, "-2", 1.0, 0.0),
        (503, "3", 0.0, 0.0),  # pauses off
        (200, "3", 1.0, 0.0),  # served: no pause
    ],
)  # fmt: skip
def test_a_refused_user_pauses_for_its_retry_after(
    status: int, retry_after: str | None, cap: float, pause: float
) -> None:
    assert pause_after(_refused(status, retry_after), cap) == pause
