"""One HTTP/1.1 connection to a backend: an asyncio protocol fed to the httptools parser.

Body bytes are queued as they arrive and handed to one consumer; reading pauses while more
than ``HIGH_WATER`` bytes wait (backpressure) and resumes below it. A response is complete
when the parser says so, or, for a close-delimited body, when the server closes.

A consumer may also take body bytes as they arrive (``divert``: a ``BodySink``), while it
waits for the next chunk and nothing is queued: the sink's ``take`` runs in the parser's
callback and either takes the bytes, or declines them and they are queued and the consumer
woken as without a sink (so the order of the bytes is kept: once one is queued, the rest of
the read is too). After a read in which the sink took bytes, ``flush`` runs once, so what it
made of one read can leave in one write.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Protocol, cast

import httptools

HIGH_WATER = 256 * 1024


class UpstreamIOError(Exception):
    """The exchange with the backend failed at the transport or protocol level."""

    def __init__(self, message: str, *, before_response: bool = False) -> None:
        super().__init__(message)
        self.before_response = before_response


class ConnectFailed(UpstreamIOError):
    """No connection could be made."""


class ProtocolFailed(UpstreamIOError):
    """The backend broke HTTP: closed early, or sent something unparseable."""


class BodySink(Protocol):
    """Takes body bytes from the connection's callback (see the module's docstring)."""

    def take(self, body: bytes) -> bool:
        """Deal with ``body`` now (True), or leave it to be queued (False, nothing done)."""
        ...

    def flush(self) -> None:
        """The end of a read in which ``take`` took bytes."""
        ...


class Http1Connection(asyncio.Protocol):
    """A keep-alive connection; one request at a time."""

    def __init__(
        self,
        on_release: Callable[[Http1Connection], None],
        on_lost: Callable[[], None] = lambda: None,
    ) -> None:
        self._on_release = on_release
        self._on_lost = on_lost
        # Made on the loop it serves; read once (each ``get_running_loop`` asks the OS for
        # the process id, per body read).
        self._loop = asyncio.get_running_loop()
        self._transport: asyncio.Transport | None = None
        self._closed = False
        self.idle_since = 0.0
        self.reused = False
        self._reset()

    def _reset(self) -> None:
        self._parser = httptools.HttpResponseParser(self)
        self._head: asyncio.Future[None] | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._status = 0
        self._headers: list[tuple[bytes, bytes]] = []
        self._chunks: deque[bytes] = deque()
        self._buffered = 0
        self._paused = False
        self._headers_done = False
        self._complete = False
        self._keep_alive = False
        self._error: UpstreamIOError | None = None
        self._got_bytes = False
        self._sink: BodySink | None = None
        self._taken = False  # the sink took bytes of the read being parsed

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's TCPTransport is not an asyncio.Transport subclass, only alike.
        if self._transport is None:
            self._transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self._got_bytes = True
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(ProtocolFailed(f"invalid HTTP from the backend: {exc}"))
            self.abort()
        if self._taken:
            self._taken = False
            if self._sink is not None:
                self._sink.flush()

    def eof_received(self) -> bool:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self._on_lost()
        if self._headers_done and not self._complete and self._until_close():
            self._complete = True
            self._wake()
        elif not self._complete:
            before = not self._got_bytes
            self._fail(ProtocolFailed("the backend closed the connection", before_response=before))

    # httptools callbacks

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers.append((name.lower(), value))

    def on_headers_complete(self) -> None:
        self._status = self._parser.get_status_code()
        self._headers_done = True
        if self._head is not None and not self._head.done():
            self._head.set_result(None)

    def on_body(self, body: bytes) -> None:
        sink = self._sink
        if sink is not None:
            waiter = self._waiter
            if waiter is not None and not waiter.done() and sink.take(body):
                self._taken = True
                return
        self._chunks.append(body)
        self._buffered += len(body)
        if self._buffered > HIGH_WATER and not self._paused and self._transport is not None:
            self._paused = True
            self._transport.pause_reading()
        self._wake()

    def on_message_complete(self) -> None:
        # Asked later, llhttp answers for the next message (False): ask while it is this one's.
        self._keep_alive = self._parser.should_keep_alive()
        self._complete = True
        self._wake()

    # the exchange

    @property
    def usable(self) -> bool:
        return not self._closed and self._transport is not None and not self._transport.is_closing()

    def send(self, head: bytes, body: bytes) -> None:
        self._reset()
        assert self._transport is not None
        self._transport.write(head + body if len(body) < 65536 else head)
        if len(body) >= 65536:
            self._transport.write(body)

    async def read_head(self) -> UpstreamResponse:
        if not self._headers_done and self._error is None:
            self._head = self._loop.create_future()
            await self._head
        if self._error is not None:
            raise self._error
        return UpstreamResponse(self, self._status, self._headers)

    async def next_chunk(self) -> bytes | None:
        while True:
            chunks = self._chunks
            if chunks:
                # Under load several events wait here; one chunk means one send downstream.
                chunk = chunks.popleft() if len(chunks) == 1 else b"".join(chunks)
                chunks.clear()
                self._buffered -= len(chunk)
                if self._paused and self._buffered <= HIGH_WATER // 2 and self._transport:
                    self._paused = False
                    self._transport.resume_reading()
                return chunk
            if self._error is not None:
                raise self._error
            if self._complete:
                return None
            self._waiter = waiter = self._loop.create_future()
            await waiter

    def divert(self, sink: BodySink | None) -> None:
        """Let ``sink`` take body bytes while ``next_chunk`` waits (None: no more)."""
        self._sink = sink

    def interrupt(self, error: BaseException) -> bool:
        """Fail the read that is waiting for body bytes with ``error`` (a stall timer's
        verdict); False when no read is waiting."""
        waiter = self._waiter
        if waiter is None or waiter.done():
            return False
        waiter.set_exception(error)
        return True

    def finish(self) -> None:
        """Give the connection back for reuse if the exchange ended cleanly, else close it."""
        # Unread chunks may mean reading is paused (backpressure): never hand that back.
        if self._complete and not self._chunks and self.usable and self._keep_alive:
            self._on_release(self)
        else:
            self.abort()

    def abort(self) -> None:
        self._closed = True
        if self._transport is not None:
            self._transport.abort()

    def _until_close(self) -> bool:
        names = {name for name, _ in self._headers}
        return b"content-length" not in names and b"transfer-encoding" not in names

    def _fail(self, error: UpstreamIOError) -> None:
        if self._error is None:
            self._error = error
        if self._head is not None and not self._head.done():
            self._head.set_result(None)
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


class UpstreamResponse:
    """A response being received: status and headers now, the body as it arrives."""

    __slots__ = ("_conn", "_done", "headers", "next_chunk", "status")

    def __init__(self, conn: Http1Connection, status: int, headers: list[tuple[bytes, bytes]]):
        self._conn = conn
        self.status = status
        self.headers = headers
        self._done = False
        # The body bytes that arrived since the last call, as one chunk (waiting for some if
        # none did); None at the end of the body. The connection's own method: one call less
        # per chunk.
        self.next_chunk: Callable[[], Awaitable[bytes | None]] = conn.next_chunk

    def header(self, name: str) -> str | None:
        key = name.lower().encode()
        for k, v in self.headers:
            if k == key:
                return v.decode("latin-1")
        return None

    def interrupt(self, error: BaseException) -> bool:
        """Make a waiting ``next_chunk`` raise ``error``; False if none is waiting."""
        return self._conn.interrupt(error)

    def divert(self, sink: BodySink | None) -> None:
        """Let ``sink`` take body bytes as they arrive while ``next_chunk`` waits (the
        connection's ``divert``); None: no more."""
        self._conn.divert(sink)

    async def chunks(self) -> AsyncIterator[bytes]:
        """Body bytes as they arrive; whatever is already buffered comes as one chunk."""
        while (chunk := await self._conn.next_chunk()) is not None:
            yield chunk

    async def read(self, limit: int | None = None) -> bytes:
        parts: list[bytes] = []
        size = 0
        while (chunk := await self._conn.next_chunk()) is not None:
            parts.append(chunk)
            size += len(chunk)
            if limit is not None and size >= limit:
                self.close()
                return b"".join(parts)[:limit]
        self.close()
        return b"".join(parts)

    def close(self) -> None:
        """End the exchange: reuse the connection if the body was read to the end."""
        if not self._done:
            self._done = True
            self._conn.finish()

    def abort(self) -> None:
        """Drop the connection now; the backend sees its client leave."""
        if not self._done:
            self._done = True
            self._conn.abort()
