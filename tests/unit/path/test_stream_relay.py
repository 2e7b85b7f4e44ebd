"""The relay loop's writes: each upstream chunk's frames go out in one write as they come,
except those read with the stream's last event, which leave with the end of the body (the
response's last write); the client's bytes are the same either way (no server)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import orjson
import pytest

from gateway.path.exchange.events import EventRelay
from gateway.path.exchange.lease import Outcome
from gateway.path.exchange.stream import StreamRelay


def _token(text: str, finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": {"content": text}, "finish_reason": finish}
    event = {"id": "c-1", "object": "chat.completion.chunk", "created": 7, "model": "up",
             "choices": [choice]}  # fmt: skip
    return b"data: " + orjson.dumps(event) + b"\n\n"


DONE = b"data: [DONE]\n\n"
ONE, TWO, END = _token(" one"), _token(" two"), _token("", "stop")


class FakeResponse:
    """An opened upstream exchange whose body arrives as ``chunks`` (then its end)."""

    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks: list[bytes | None] = [*chunks, None]
        self.closed = False

    async def next_chunk(self) -> bytes | None:
        return self._chunks.pop(0) if self._chunks else None

    def interrupt(self, error: BaseException) -> bool:
        return False

    def close(self) -> None:
        self.closed = True


class FakeLease:
    def __init__(self) -> None:
        request = SimpleNamespace(model="bench", endpoint="chat")
        redactor = SimpleNamespace(redacts_content=False)
        self.ctx = SimpleNamespace(
            request=request, policy=SimpleNamespace(redactor=redactor), arrival=0.0
        )
        self.backend = SimpleNamespace(name="b")
        self.outcomes: list[Outcome] = []

    def first_token(self) -> None:
        return None

    def finish(self, outcome: Outcome) -> None:
        self.outcomes.append(outcome)


async def _pump(chunks: list[bytes]) -> tuple[list[bytes], bytes, FakeLease]:
    lease = FakeLease()
    relay: Any = StreamRelay
    timeouts = SimpleNamespace(total_s=60.0, first_token_s=30.0, idle_s=30.0)
    events = EventRelay(lease, None)  # type: ignore[arg-type]
    source = relay(lease, FakeResponse(chunks), timeouts, lambda: 1.0, events, None)
    writes: list[bytes] = []

    async def write(chunk: bytes) -> None:
        writes.append(chunk)

    last = await source.pump(write)
    return writes, last, lease


def _public(frames: bytes) -> bytes:
    return frames.replace(b'"model":"up"', b'"model":"bench"')


# upstream chunks -> (the frames written as they came, the response's last bytes)
CASES: dict[str, tuple[list[bytes], list[bytes], bytes]] = {
    "a whole answer in one chunk: one write, the last": (
        [ONE + TWO + END + DONE], [], _public(ONE + TWO + END) + DONE,
    ),
    "the last event alone: every token as it came": (
        [ONE, TWO, END, DONE], [_public(ONE), _public(TWO), _public(END)], DONE,
    ),
    "the last token with the last event: it leaves with the end": (
        [ONE, TWO + END + DONE], [_public(ONE)], _public(TWO + END) + DONE,
    ),
}  # fmt: skip


@pytest.mark.parametrize(("chunks", "written", "last"), CASES.values(), ids=CASES.keys())
async def test_the_frames_read_with_the_last_event_leave_with_the_end(
    chunks: list[bytes], written: list[bytes], last: bytes
) -> None:
    writes, ending, lease = await _pump(chunks)
    assert (writes, ending) == (written, last)
    assert [o.status for o in lease.outcomes] == [200]


async def test_a_stream_cut_short_is_written_as_it_came_then_its_error() -> None:
    writes, ending, lease = await _pump([ONE, TWO])  # the upstream ends without [DONE]
    assert writes == [_public(ONE), _public(TWO)]
    assert ending.startswith(b"data: {")
    assert b'"error"' in ending
    assert [o.status for o in lease.outcomes] == [502]
