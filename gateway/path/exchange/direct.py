"""Relay plain token events from the upstream connection's callback: no task step per token.

Once a stream's first token is relayed, and when the server offers a way to the client's
connection past the ASGI ``send`` (``ClientBody``, ``openai/streaming.py``), the relay loop
(``stream.py``) gives the upstream connection a ``DirectRelay`` (its ``BodySink``,
``upstream/connection.py``) before it waits for the next chunk. Each body chunk that arrives
while it waits goes to ``take``, in the parser's callback, and is taken only when all of this
holds: the client takes bytes now (``ClientBody.ready``: connected, its write buffer under the
high-water mark), the exchange's total deadline has not passed, and the chunk is one plain
token event made on the stream's template (``EventRelay.plain``: counted, kept for a
continuation and the cache's capture, exactly as the loop would). A taken chunk tells the
stall timer of the progress (``idle_s``) and its frame waits for ``flush``, which the
connection calls once at the end of the read: a read of several tokens leaves in one write,
as the loop would write it. Anything else (the finishing and usage events, errors, a chunk
of several events or of part of one, a full client buffer, a gone client, a passed deadline)
is declined: the connection queues it and wakes the loop, which does what it always did (and
while the loop is busy the connection queues every chunk, so the order is kept).
"""

from __future__ import annotations

from collections.abc import Callable

from gateway.openai.streaming import ClientBody
from gateway.path.exchange.events import EventRelay


class DirectRelay:
    """A ``BodySink`` writing a stream's plain token events to its client's connection."""

    __slots__ = ("_clock", "_deadline", "_frames", "_idle_s", "_plain", "_progress", "_ready",
                 "_write")  # fmt: skip

    def __init__(
        self,
        body: ClientBody,
        events: EventRelay,
        progress: Callable[[float, float], None],
        clock: Callable[[], float],
        deadline: float,
        idle_s: float,
    ) -> None:
        self._ready, self._write = body.ready, body.write
        self._plain = events.plain
        self._progress = progress
        self._clock = clock
        self._deadline = deadline
        self._idle_s = idle_s
        self._frames: list[bytes] = []

    def take(self, body: bytes) -> bool:
        if not self._ready():
            return False
        now = self._clock()
        if now >= self._deadline:
            return False
        frame = self._plain(body)
        if frame is None:
            return False
        self._progress(now, self._idle_s)
        self._frames.append(frame)
        return True

    def flush(self) -> None:
        frames = self._frames
        if frames:
            self._write(frames[0] if len(frames) == 1 else b"".join(frames))
            frames.clear()
