"""The ``ClientBody`` over a uvicorn cycle: ready only for a started chunked body, not ended,
the client connected and its buffer under the high-water mark; chunks framed as uvicorn frames
them. The response takes it from the scope's extensions, and goes without it when absent."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from gateway.commands.client_body import CycleBody
from gateway.openai.disconnect import DisconnectWatch
from gateway.openai.streaming import CLIENT_BODY, ClientBody, EventStreamResponse, Write


class Transport:
    def __init__(self) -> None:
        self.written: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.written.append(data)


def _body(
    chunked: bool | None = True, paused: bool = False, gone: bool = False, ended: bool = False
) -> tuple[CycleBody, Transport]:
    transport = Transport()
    cycle = SimpleNamespace(
        transport=transport, chunked_encoding=chunked, disconnected=gone, response_complete=ended
    )
    flow = SimpleNamespace(write_paused=paused)
    return CycleBody(cycle, flow), transport  # type: ignore[arg-type]


READY: dict[str, tuple[dict[str, Any], bool]] = {
    "a chunked body under way": ({}, True),
    "not started, or a content-length or HEAD response": ({"chunked": None}, False),
    "a content-length body": ({"chunked": False}, False),
    "the client's buffer over its high-water mark": ({"paused": True}, False),
    "the client gone": ({"gone": True}, False),
    "the response ended": ({"ended": True}, False),
}


@pytest.mark.parametrize(("state", "ready"), READY.values(), ids=READY.keys())
def test_ready(state: dict[str, Any], ready: bool) -> None:
    assert _body(**state)[0].ready() is ready


FRAMES: dict[str, tuple[bytes, bytes]] = {
    "short": (b"abc", b"3\r\nabc\r\n"),
    "sixteen bytes: hex size": (b"x" * 16, b"10\r\n" + b"x" * 16 + b"\r\n"),
    "an event": (b"data: {}\n\n", b"a\r\ndata: {}\n\n\r\n"),
}


@pytest.mark.parametrize(("chunk", "framed"), FRAMES.values(), ids=FRAMES.keys())
def test_write_frames_a_chunk_as_uvicorn_does(chunk: bytes, framed: bytes) -> None:
    body, transport = _body()
    body.write(chunk)
    assert transport.written == [framed]
    # uvicorn's own framing of a chunked body's chunk (httptools_impl's send)
    assert framed == b"".join([b"%x\r\n" % len(chunk), chunk, b"\r\n"])


class Source:
    def __init__(self) -> None:
        self.bodies: list[ClientBody | None] = []

    async def pump(self, write: Write, body: ClientBody | None) -> bytes:
        self.bodies.append(body)
        await write(b"data: 1\n\n")
        return b"data: [DONE]\n\n"

    def goodbye(self, error: dict[str, Any]) -> bytes:
        return b""

    def abandon(self) -> None:
        return None


@pytest.mark.parametrize("offered", [True, False], ids=["extension", "no extension"])
async def test_the_response_hands_the_source_the_scopes_client_body(offered: bool) -> None:
    sent: list[dict[str, Any]] = []
    body = _body()[0]
    scope: dict[str, Any] = {"type": "http", "extensions": {CLIENT_BODY: body}} if offered else {
        "type": "http"}  # fmt: skip

    async def receive() -> dict[str, Any]:
        await asyncio.Event().wait()  # the client never leaves
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    source = Source()
    response = EventStreamResponse(source, DisconnectWatch(receive), {})
    await response(scope, receive, send)
    assert source.bodies == [body if offered else None]
    # Head, the chunk written through send, the end: send starts and ends the body either way.
    assert [m["type"] for m in sent] == ["http.response.start", *["http.response.body"] * 2]
    assert sent[-1] == {"type": "http.response.body", "body": b"data: [DONE]\n\n",
                        "more_body": False}  # fmt: skip
