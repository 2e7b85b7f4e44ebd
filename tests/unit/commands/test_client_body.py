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
    flow = SimpleNamespace(write_paused=paused, resumed=0)
    flow.resume_reading = lambda: setattr(flow, "resumed", flow.resumed + 1)
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


# What happens to a request's disconnect callback: (gone when registered, stopped before the
# connection is lost, the cycle marked disconnected when lost, the lost cycle the request's)
# -> calls
DISCONNECTS: dict[str, tuple[bool, bool, bool, bool, int]] = {
    "the client leaves mid-response": (False, False, True, True, 1),
    "gone already when the watch starts: called at once, once": (True, False, True, True, 1),
    "the response ended first (uvicorn does not mark it)": (False, False, False, True, 0),
    "the watch stopped (the response is done)": (False, True, True, True, 0),
    "lost under a later request's cycle (pipelined)": (False, False, True, False, 0),
}


@pytest.mark.parametrize(
    ("gone", "stopped", "marked", "same", "calls"), DISCONNECTS.values(), ids=DISCONNECTS.keys()
)
def test_the_cycle_tells_the_watch_of_a_client_that_leaves(
    gone: bool, stopped: bool, marked: bool, same: bool, calls: int
) -> None:
    body = _body(gone=gone)[0]
    cycle: Any = body._cycle
    called: list[None] = []
    body.on_disconnect(lambda: called.append(None))
    assert body._flow.resumed == 1  # type: ignore[attr-defined]  # reading resumes
    if stopped:
        body.on_disconnect(None)
    cycle.disconnected = marked
    body.lost(cycle if same else SimpleNamespace(disconnected=True))  # type: ignore[arg-type]
    body.lost(cycle if same else SimpleNamespace(disconnected=True))  # type: ignore[arg-type]
    assert len(called) == calls


@pytest.mark.parametrize("gone", [False, True], ids=["stays", "leaves"])
async def test_a_watch_on_a_hook_cancels_the_task_without_a_task_of_its_own(gone: bool) -> None:
    body = _body()[0]
    cycle: Any = body._cycle

    async def receive() -> dict[str, Any]:
        raise AssertionError("a hook is there: receive is never asked")

    async def serving() -> str:
        watch = DisconnectWatch(receive, body)
        tasks = len(asyncio.all_tasks())
        try:
            if gone:
                cycle.disconnected = True
                body.lost(cycle)
            await asyncio.sleep(0)
        except asyncio.CancelledError:
            assert watch.absorb()
            return "absorbed"
        finally:
            watch.stop()
        assert len(asyncio.all_tasks()) == tasks
        return "served"

    assert await asyncio.create_task(serving()) == ("absorbed" if gone else "served")
    assert body._gone is None  # stopped: a later loss calls nobody
