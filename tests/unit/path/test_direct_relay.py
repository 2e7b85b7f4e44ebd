"""Plain tokens relayed from the upstream connection's callback (``exchange/direct.py``): taken
only when the client is ready, the deadline not passed and the chunk one plain token on the
stream's template; the client's bytes, counts and outcome are the loop's own either way, with a
``ClientBody`` or without one (the ASGI path)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from gateway.path.exchange.direct import DirectRelay
from gateway.path.exchange.events import EventRelay
from gateway.path.exchange.stream import StreamRelay
from gateway.upstream.connection import BodySink
from tests.unit.path.test_stream_relay import DONE, END, ONE, TWO, FakeLease, _public, _token

THREE = _token(" three")


def _choices_first(text: str) -> bytes:
    """A token event with ``choices`` before ``model`` (llama.cpp's order): never plain."""
    choice = {"index": 0, "delta": {"content": text}, "finish_reason": None}
    event = {"choices": [choice], "id": "c-1", "created": 7, "model": "up"}
    return b"data: " + orjson.dumps(event) + b"\n\n"


LLAMA_ONE, LLAMA_TWO = _choices_first(" one"), _choices_first(" two")


class Body:
    """A ``ClientBody`` that records its writes; ``ready`` as set."""

    def __init__(self, ready: bool = True) -> None:
        self.is_ready = ready
        self.writes: list[bytes] = []

    def ready(self) -> bool:
        return self.is_ready

    def write(self, chunk: bytes) -> None:
        assert self.is_ready
        self.writes.append(chunk)


def _relay_after(first: bytes) -> tuple[EventRelay, FakeLease]:
    lease = FakeLease()
    events = EventRelay(lease, None)  # type: ignore[arg-type]
    assert events.feed(first)  # the first plain token makes the stream's template
    return events, lease


# chunk taken? (body ready, clock, the chunk) -> (taken, frames flushed)
TAKE: dict[str, tuple[bool, float, bytes, bool]] = {
    "a plain token": (True, 1.0, TWO, True),
    "the client's buffer is full": (False, 1.0, TWO, False),
    "past the deadline": (True, 10.0, TWO, False),
    "the finishing event": (True, 1.0, END, False),
    "two events in one chunk": (True, 1.0, TWO + THREE, False),
    "part of an event": (True, 1.0, TWO[:20], False),
    "the end of the stream": (True, 1.0, DONE, False),
}  # fmt: skip


@pytest.mark.parametrize(("ready", "now", "chunk", "taken"), TAKE.values(), ids=TAKE.keys())
def test_take(ready: bool, now: float, chunk: bytes, taken: bool) -> None:
    events, _ = _relay_after(ONE)
    body, progress = Body(ready), []
    sink = DirectRelay(body, events, lambda *a: progress.append(a), lambda: now, 10.0, 5.0)
    assert sink.take(chunk) is taken
    sink.flush()
    assert body.writes == ([_public(chunk)] if taken else [])
    assert events.token_events == (2 if taken else 1)  # nothing counted when declined
    assert progress == ([(now, 5.0)] if taken else [])


def test_flush_writes_a_read_once() -> None:
    events, _ = _relay_after(ONE)
    body = Body()
    sink = DirectRelay(body, events, lambda *a: None, lambda: 1.0, 10.0, 5.0)
    assert sink.take(TWO)
    assert sink.take(THREE)
    assert body.writes == []
    sink.flush()
    sink.flush()  # nothing taken since: nothing written
    assert body.writes == [_public(TWO + THREE)]
    assert events.token_events == 3


class DivertingResponse:
    """An upstream exchange whose chunks go to the sink first, as the connection's callback
    gives them while the relay waits (``Http1Connection.on_body``)."""

    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks: list[bytes | None] = [*chunks, None]
        self.sink: BodySink | None = None
        self.diverted = 0
        self.taken = 0
        self.closed = False

    async def next_chunk(self) -> bytes | None:
        while self._chunks:
            chunk = self._chunks.pop(0)
            if chunk is None or self.sink is None or not self.sink.take(chunk):
                return chunk
            self.taken += 1
            self.sink.flush()
        return None

    def divert(self, sink: BodySink | None) -> None:
        self.diverted += sink is not None
        self.sink = sink

    def interrupt(self, error: BaseException) -> bool:
        return False

    def close(self) -> None:
        assert self.sink is None, "the sink outlived the exchange"
        self.closed = True


async def _pump(
    chunks: list[bytes], body: Body | None
) -> tuple[bytes, Any, FakeLease, DivertingResponse]:
    lease = FakeLease()
    relay: Any = StreamRelay
    timeouts: Any = type("T", (), {"total_s": 60.0, "first_token_s": 30.0, "idle_s": 30.0})
    events = EventRelay(lease, None)  # type: ignore[arg-type]
    response = DivertingResponse(chunks)
    source = relay(lease, response, timeouts, lambda: 1.0, events, None)
    writes: list[bytes] = []

    async def write(chunk: bytes) -> None:
        writes.append(chunk)

    last = await source.pump(write, body)
    sent = b"".join([*writes, *(body.writes if body else []), last])
    assert response.closed
    return sent, events, lease, response


# upstream chunks -> (sinks armed, chunks they took, the writes through the ClientBody)
STREAMS: dict[str, tuple[list[bytes], int, int, list[bytes]]] = {
    "token by token": ([ONE, TWO, THREE, END, DONE], 1, 2, [ONE, TWO, THREE, END]),
    "tokens with the end": ([ONE, TWO, THREE + END + DONE], 1, 1, [ONE, TWO]),
    "several events a read": ([ONE, TWO + THREE, END, DONE], 1, 0, [ONE, TWO + THREE, END]),
    "cut short": ([ONE, TWO, THREE], 1, 2, [ONE, TWO, THREE]),
    "no plain token, no template: no sink": (
        [LLAMA_ONE, LLAMA_TWO, END, DONE], 0, 0, [LLAMA_ONE, LLAMA_TWO, END]
    ),
}  # fmt: skip


@pytest.mark.parametrize(
    ("chunks", "armed", "taken", "writes"), STREAMS.values(), ids=STREAMS.keys()
)
async def test_the_client_gets_the_same_bytes_with_a_client_body(
    chunks: list[bytes], armed: int, taken: int, writes: list[bytes]
) -> None:
    asgi, asgi_events, asgi_lease, response = await _pump(chunks, None)
    assert (response.diverted, response.taken) == (0, 0)
    body = Body()
    direct, events, lease, response = await _pump(chunks, body)
    # Armed once, after the first token (which the loop relays itself).
    assert (response.diverted, response.taken) == (armed, taken)
    assert body.writes == [_public(w) for w in writes]
    assert direct == asgi
    assert events.token_events == asgi_events.token_events
    assert lease.outcomes == asgi_lease.outcomes


async def test_a_client_that_is_not_ready_gets_every_byte_through_send() -> None:
    body = Body(ready=False)
    sent, _, _, _ = await _pump([ONE, TWO, THREE, END, DONE], body)
    assert body.writes == []
    assert sent == _public(ONE + TWO + THREE + END) + DONE
