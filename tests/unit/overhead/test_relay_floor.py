"""The bare relay of the overhead benchmark's floor: the upstream's answer, as it came."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.types import Receive, Scope, Send

from loadtests.overhead.relay_floor import RelayFloor
from tests.support.servers import serve

EVENTS = [b'data: {"n": 1}\n\n', b'data: {"n": 2}\n\n', b"data: [DONE]\n\n"]


async def _upstream(scope: Scope, receive: Receive, send: Send) -> None:
    """Echoes the request's body length and content type, then three events."""
    if scope["type"] == "lifespan":
        await receive()
        await send({"type": "lifespan.startup.complete"})
        await receive()
        await send({"type": "lifespan.shutdown.complete"})
        return
    message = await receive()
    kind = dict(scope["headers"]).get(b"content-type", b"")
    headers = [(b"content-type", b"text/event-stream"), (b"x-kind", kind)]
    await send({"type": "http.response.start", "status": 201, "headers": headers})
    first = f"data: {len(message['body'])} {kind.decode()}\n\n".encode()
    for chunk in [first, *EVENTS]:
        await send({"type": "http.response.body", "body": chunk, "more_body": True})
    await send({"type": "http.response.body", "body": b""})


@pytest.fixture(scope="module")
def upstream() -> Iterator[str]:
    with serve(_upstream) as url:
        yield url


def _call(app: RelayFloor, method: str, path: str, body: bytes) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []
    headers = [(b"content-type", b"application/json"), (b"x-other", b"dropped")]
    scope = {"type": "http", "method": method, "path": path, "headers": headers}
    parts = [{"type": "http.request", "body": body[:3], "more_body": True},
             {"type": "http.request", "body": body[3:], "more_body": False}]  # fmt: skip

    async def receive() -> dict[str, Any]:
        return parts.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    return sent


def test_the_answer_is_relayed_as_it_came(upstream: str) -> None:
    sent = _call(RelayFloor(upstream), "POST", "/v1/chat/completions", b'{"model": "m"}')
    assert sent[0] == {"type": "http.response.start", "status": 201,
                       "headers": [(b"content-type", b"text/event-stream")]}  # fmt: skip
    body = b"".join(m["body"] for m in sent[1:])
    assert body == b"data: 14 application/json\n\n" + b"".join(EVENTS)
    assert sent[-1] == {"type": "http.response.body", "body": b"", "more_body": False}


def test_health_answers_without_the_upstream() -> None:
    sent = _call(RelayFloor("http://127.0.0.1:9"), "GET", "/health", b"")
    assert [m.get("status") for m in sent] == [200, None]
    assert sent[1]["body"] == b"ok"
