"""A connection's ``BodySink`` (``divert``): offered body bytes only while the consumer waits
and nothing is queued, flushed once per read in which it took some; what it declines is queued
with everything after it in the read, so the bytes keep their order."""

from __future__ import annotations

import asyncio

from gateway.upstream.connection import Http1Connection

HEAD = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%b\r\n" % (len(data), data)


class Transport:
    def __init__(self) -> None:
        self.written: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.written.append(data)

    def is_closing(self) -> bool:
        return False

    def abort(self) -> None:
        return None


class Sink:
    """Takes every body but ``b"no"``; records what it took and its flushes."""

    def __init__(self) -> None:
        self.taken: list[bytes] = []
        self.flushes: list[list[bytes]] = []

    def take(self, body: bytes) -> bool:
        if body == b"no":
            return False
        self.taken.append(body)
        return True

    def flush(self) -> None:
        self.flushes.append(self.taken)
        self.taken = []


async def _opened() -> Http1Connection:
    conn = Http1Connection(lambda _: None)
    conn.connection_made(Transport())  # type: ignore[arg-type]
    conn.send(b"POST / HTTP/1.1\r\n\r\n", b"")
    conn.data_received(HEAD)
    await conn.read_head()
    return conn


async def _waiting(conn: Http1Connection) -> asyncio.Task[bytes | None]:
    task = asyncio.ensure_future(conn.next_chunk())
    await asyncio.sleep(0)  # (one loop turn: the read is waiting)
    assert not task.done()
    return task


async def test_a_sink_takes_a_read_while_the_consumer_waits_then_flushes_once() -> None:
    conn, sink = await _opened(), Sink()
    conn.divert(sink)
    task = await _waiting(conn)
    conn.data_received(_chunk(b"a") + _chunk(b"b"))
    assert sink.flushes == [[b"a", b"b"]]
    assert not task.done()
    conn.data_received(_chunk(b"c"))
    assert sink.flushes == [[b"a", b"b"], [b"c"]]
    task.cancel()


async def test_what_the_sink_declines_is_queued_with_the_rest_of_the_read() -> None:
    conn, sink = await _opened(), Sink()
    conn.divert(sink)
    task = await _waiting(conn)
    conn.data_received(_chunk(b"a") + _chunk(b"no") + _chunk(b"c"))
    assert sink.flushes == [[b"a"]]  # "c" came after a declined body: queued, not offered
    assert await task == b"noc"


async def test_no_sink_offered_while_the_consumer_is_busy_or_after_divert_none() -> None:
    conn, sink = await _opened(), Sink()
    conn.divert(sink)
    conn.data_received(_chunk(b"a"))  # nobody waits: queued
    assert await conn.next_chunk() == b"a"
    conn.divert(None)
    task = await _waiting(conn)
    conn.data_received(_chunk(b"b"))
    assert await task == b"b"
    assert sink.flushes == []
    conn.data_received(b"0\r\n\r\n")
    assert await conn.next_chunk() is None
