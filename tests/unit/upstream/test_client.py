"""The gateway's HTTP/1.1 client (``gateway.upstream``) against real sockets on 127.0.0.1.

Each test drives the server side by hand (``Backend``/``Peer``), so the bytes on the wire and
the moments they are written are exact. Every test runs on the default event loop and on
uvloop (what production uses; its transports may call ``connection_made`` late and are not
``asyncio.Transport`` subclasses). Nothing sleeps to wait for state: waits are on events and
futures, each bounded by ``WAIT`` as a safety net.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from types import TracebackType
from typing import cast

import pytest
import uvloop

from gateway.upstream import (
    ConnectFailed,
    ConnectionPool,
    Origin,
    ProtocolFailed,
    UpstreamIOError,
    UpstreamResponse,
)
from gateway.upstream import connection as connection_module
from gateway.upstream import connection_pool as pool_module
from gateway.upstream.connection import HIGH_WATER, Http1Connection

WAIT = 2.0  # the most any single wait may take; tests finish long before
TEST_BUDGET = 4.0

# --- running each test on both event loops ----------------------------------------------------

LOOPS: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {
    "asyncio": asyncio.SelectorEventLoop,
    "uvloop": uvloop.new_event_loop,
}


class Peer:
    """The server's side of one accepted connection."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    async def read_request(self) -> bytes:
        """One whole request (head and content-length body), exactly as it arrived."""
        head = await asyncio.wait_for(self.reader.readuntil(b"\r\n\r\n"), WAIT)
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        body = await asyncio.wait_for(self.reader.readexactly(length), WAIT) if length else b""
        return head + body

    def send(self, data: bytes) -> None:
        self.writer.write(data)

    async def respond(self, data: bytes) -> bytes:
        """Read one request, answer it with ``data``; returns the request."""
        request = await self.read_request()
        self.send(data)
        return request

    def close(self) -> None:
        self.writer.close()

    async def expect_client_gone(self) -> None:
        """Wait until the client closes or resets the connection, sending nothing more."""
        try:
            rest = await asyncio.wait_for(self.reader.read(), WAIT)
        except ConnectionResetError:
            return
        assert rest == b""


class Backend:
    """A listening socket whose accepted connections the test answers by hand."""

    def __init__(self) -> None:
        self.peers: asyncio.Queue[Peer] = asyncio.Queue()
        self.accepted = 0
        self._all: list[Peer] = []
        self._server: asyncio.Server | None = None
        self.port = 0

    async def __aenter__(self) -> Backend:
        self._server = await asyncio.start_server(self._on_connect, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._server is not None
        self._server.close()
        for peer in self._all:
            peer.close()
        await self._server.wait_closed()
        for peer in self._all:
            with contextlib.suppress(Exception):
                await peer.writer.wait_closed()

    def _on_connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = Peer(reader, writer)
        self._all.append(peer)
        self.accepted += 1
        self.peers.put_nowait(peer)

    async def accept(self) -> Peer:
        return await asyncio.wait_for(self.peers.get(), WAIT)

    def origin(self, base_path: str = "") -> Origin:
        return Origin.from_url(f"http://127.0.0.1:{self.port}{base_path}")


class Harness:
    """A backend, a pool and the origin that joins them."""

    def __init__(self, backend: Backend, pool: ConnectionPool) -> None:
        self.backend = backend
        self.pool = pool
        self.origin = backend.origin()
        self.tasks: list[asyncio.Task[UpstreamResponse]] = []

    async def request(
        self,
        path: str = "/v1/x",
        *,
        method: str = "POST",
        headers: Sequence[tuple[str, str]] = (),
        body: bytes = b"",
        origin: Origin | None = None,
    ) -> UpstreamResponse:
        return await self.pool.request(
            origin or self.origin, method, path, headers, body, connect_timeout_s=WAIT
        )

    def start(
        self,
        path: str = "/v1/x",
        *,
        method: str = "POST",
        headers: Sequence[tuple[str, str]] = (),
        body: bytes = b"",
        origin: Origin | None = None,
    ) -> asyncio.Task[UpstreamResponse]:
        """``request`` as a task, so the test can play the server meanwhile."""
        request = self.request(path, method=method, headers=headers, body=body, origin=origin)
        task = asyncio.create_task(request)
        self.tasks.append(task)
        return task

    async def settle(self) -> None:
        """End the requests a failed test left behind, and mark their errors as seen."""
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)

    @property
    def idle(self) -> int:
        return self.pool.idle_count(self.origin)


Main = Callable[[Harness], Awaitable[None]]
Run = Callable[..., None]


@pytest.fixture(params=sorted(LOOPS))
def run(request: pytest.FixtureRequest) -> Run:
    """``run(main, pool=...)``: run ``main(harness)`` on a fresh loop of the parametrized kind."""
    factory = LOOPS[request.param]

    def _run(main: Main, pool: ConnectionPool | None = None) -> None:
        async def wrapper() -> None:
            upstream = pool or ConnectionPool()
            async with Backend() as backend:
                harness = Harness(backend, upstream)
                try:
                    await asyncio.wait_for(main(harness), TEST_BUDGET)
                finally:
                    await harness.settle()
                    upstream.close()

        with asyncio.Runner(loop_factory=factory) as runner:
            runner.run(wrapper())

    return _run


def response(
    body: bytes = b"", *, status: str = "200 OK", headers: Sequence[str] = (), version: str = "1.1"
) -> bytes:
    lines = [f"HTTP/{version} {status}", f"content-length: {len(body)}", *headers, "", ""]
    return "\r\n".join(lines).encode() + body


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


CHUNKED_HEAD = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
LAST_CHUNK = b"0\r\n\r\n"


async def next_bytes(chunks: AsyncIterator[bytes], size: int) -> bytes:
    """Read from a body iterator until ``size`` bytes came (TCP may split a write)."""
    data = b""
    while len(data) < size:
        data += await asyncio.wait_for(anext(chunks), WAIT)
    return data


async def read_all(response_: UpstreamResponse) -> bytes:
    return await asyncio.wait_for(response_.read(), WAIT)


async def body_of(task: asyncio.Task[UpstreamResponse]) -> bytes:
    return await read_all(await task)


# --- body framing -----------------------------------------------------------------------------


def test_content_length_body(run: Run) -> None:
    async def main(h: Harness) -> None:
        task = h.start()
        peer = await h.backend.accept()
        await peer.respond(response(b"hello", headers=["X-Trace: a1", "Retry-After: 3"]))
        resp = await task
        assert resp.status == 200
        assert resp.headers == [
            (b"content-length", b"5"),
            (b"x-trace", b"a1"),
            (b"retry-after", b"3"),
        ]
        assert resp.header("X-TRACE") == "a1"
        assert resp.header("retry-after") == "3"
        assert resp.header("missing") is None
        assert await read_all(resp) == b"hello"
        assert h.idle == 1

    run(main)


def test_status_other_than_200(run: Run) -> None:
    async def main(h: Harness) -> None:
        task = h.start()
        peer = await h.backend.accept()
        await peer.respond(response(b'{"error": "x"}', status="503 Service Unavailable"))
        resp = await task
        assert resp.status == 503
        assert await read_all(resp) == b'{"error": "x"}'

    run(main)


def test_chunked_body_arrives_chunk_by_chunk(run: Run) -> None:
    async def main(h: Harness) -> None:
        task = h.start()
        peer = await h.backend.accept()
        await peer.respond(CHUNKED_HEAD + chunk(b"data: one\n\n"))
        resp = await task
        chunks = aiter(resp.chunks())
        # The second chunk is only written once the client holds the first one.
        assert await next_bytes(chunks, 11) == b"data: one\n\n"
        peer.send(chunk(b"data: two\n\n"))
        assert await next_bytes(chunks, 11) == b"data: two\n\n"
        peer.send(LAST_CHUNK)
        with pytest.raises(StopAsyncIteration):
            await asyncio.wait_for(anext(chunks), WAIT)
        resp.close()
        assert h.idle == 1

    run(main)


def test_close_delimited_body_ends_at_eof(run: Run) -> None:
    async def main(h: Harness) -> None:
        task = h.start()
        peer = await h.backend.accept()
        await peer.respond(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nfirst ")
        resp = await task
        chunks = aiter(resp.chunks())
        assert await next_bytes(chunks, 6) == b"first "
        peer.send(b"second")
        peer.close()
        assert await next_bytes(chunks, 6) == b"second"
        with pytest.raises(StopAsyncIteration):
            await asyncio.wait_for(anext(chunks), WAIT)
        resp.close()
        assert h.idle == 0

    run(main)


def test_no_content_response_completes_without_body(run: Run) -> None:
    async def main(h: Harness) -> None:
        task = h.start()
        peer = await h.backend.accept()
        await peer.respond(b"HTTP/1.1 204 No Content\r\n\r\n")
        resp = await task
        assert resp.status == 204
        assert await read_all(resp) == b""
        assert h.idle == 1  # not mistaken for a close-delimited body

    run(main)


def test_read_with_limit_stops_early_and_drops_the_connection(run: Run) -> None:
    async def main(h: Harness) -> None:
        task = h.start()
        peer = await h.backend.accept()
        # Ten bytes announced, four sent: read(4) must not wait for the rest.
        await peer.respond(b"HTTP/1.1 500 Oops\r\ncontent-length: 10\r\n\r\nabcd")
        resp = await task
        assert await asyncio.wait_for(resp.read(4), WAIT) == b"abcd"
        await peer.expect_client_gone()
        assert h.idle == 0

    run(main)


# --- the request on the wire ------------------------------------------------------------------


def test_request_bytes_on_the_wire(run: Run) -> None:
    async def main(h: Harness) -> None:
        origin = h.backend.origin("/base/")
        headers = [("content-type", "application/json"), ("X-Request-Id", "abc"), ("a", "")]
        task = h.start("/v1/chat/completions", headers=headers, body=b'{"a":1}', origin=origin)
        peer = await h.backend.accept()
        request = await peer.respond(response())
        assert request == (
            b"POST /base/v1/chat/completions HTTP/1.1\r\n"
            b"host: 127.0.0.1:%d\r\n"
            b"content-length: 7\r\n"
            b"content-type: application/json\r\n"
            b"X-Request-Id: abc\r\n"
            b"a: \r\n"
            b"\r\n"
            b'{"a":1}' % h.backend.port
        )
        await read_all(await task)

    run(main)


def test_get_without_body_sends_content_length_zero(run: Run) -> None:
    async def main(h: Harness) -> None:
        task = h.start("/health", method="GET")
        peer = await h.backend.accept()
        request = await peer.respond(response(b"ok"))
        assert (
            request
            == b"GET /health HTTP/1.1\r\nhost: 127.0.0.1:%d\r\ncontent-length: 0\r\n\r\n"
            % (h.backend.port)
        )
        assert await read_all(await task) == b"ok"

    run(main)


def test_large_request_body_arrives_intact(run: Run) -> None:
    body = random.Random(7).randbytes(300_000)  # above the single-write threshold

    async def main(h: Harness) -> None:
        task = h.start(body=body)
        peer = await h.backend.accept()
        request = await peer.respond(response(b"ok"))
        assert b"\r\ncontent-length: 300000\r\n" in request
        assert request.endswith(b"\r\n\r\n" + body)
        assert await read_all(await task) == b"ok"

    run(main)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("x-evil", "a\r\nhost: other"),
        ("x-evil", "a\nb"),
        ("x-evil", "a\rb"),
        ("x-evil\r\nhost", "other"),
        ("x-evil\n", "v"),
    ],
)
def test_header_with_line_break_is_refused(run: Run, name: str, value: str) -> None:
    async def main(h: Harness) -> None:
        with pytest.raises(ValueError, match="line break"):
            await h.request(headers=[("ok", "fine"), (name, value)])
        assert h.backend.accepted == 0  # refused before any connection was made
        assert h.backend.peers.empty()

    run(main)


# --- keep-alive -------------------------------------------------------------------------------


def test_keepalive_reuses_one_connection(run: Run) -> None:
    async def main(h: Harness) -> None:
        assert h.idle == 0
        task = h.start()
        peer = await h.backend.accept()
        await peer.respond(response(b"one"))
        assert await read_all(await task) == b"one"
        assert h.idle == 1

        task = h.start("/second")
        request = await peer.respond(response(b"two"))  # the same server connection
        assert request.startswith(b"POST /second HTTP/1.1\r\n")
        resp = await task
        assert h.idle == 0  # in use
        assert await read_all(resp) == b"two"
        assert h.idle == 1
        assert h.backend.accepted == 1

    run(main)


def test_chunked_then_content_length_on_one_connection(run: Run) -> None:
    async def main(h: Harness) -> None:
        task = h.start()
        peer = await h.backend.accept()
        await peer.respond(CHUNKED_HEAD + chunk(b"ab") + chunk(b"cd") + LAST_CHUNK)
        assert await read_all(await task) == b"abcd"
        task = h.start()
        await peer.respond(response(b"efg"))
        assert await read_all(await task) == b"efg"
        assert h.backend.accepted == 1

    run(main)


@pytest.mark.parametrize(
    "answer",
    [
        response(b"bye", headers=["Connection: close"]),
        response(b"bye", version="1.0"),
    ],
    ids=["connection-close", "http-1.0"],
)
def test_response_forbidding_keepalive_is_not_reused(run: Run, answer: bytes) -> None:
    async def main(h: Harness) -> None:
        task = h.start()
        first = await h.backend.accept()
        await first.respond(answer)
        assert await read_all(await task) == b"bye"
        assert h.idle == 0
        await first.expect_client_gone()

        task = h.start()
        second = await h.backend.accept()
        await second.respond(response(b"again"))
        assert await read_all(await task) == b"again"

    run(main)


def test_close_before_the_body_ended_drops_the_connection(run: Run) -> None:
    async def main(h: Harness) -> None:
        task = h.start()
        peer = await h.backend.accept()
        await peer.respond(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n012")
        resp = await task
        resp.close()
        await peer.expect_client_gone()
        assert h.idle == 0

    run(main)


def test_close_with_the_body_unread_drops_the_connection(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A low high-water mark makes the whole (small) response pause reading as it arrives:
    # handing such a connection back would leave the next request waiting forever.
    monkeypatch.setattr(connection_module, "HIGH_WATER", 4)

    async def main(h: Harness) -> None:
        task = h.start()
        peer = await h.backend.accept()
        await peer.respond(response(b"0123456789"))  # one write: head and body arrive together
        resp = await task
        resp.close()  # the body was never read
        await peer.expect_client_gone()
        assert h.idle == 0

        task = h.start()
        second = await h.backend.accept()
        await second.respond(response(b"fine"))
        assert await read_all(await task) == b"fine"

    run(main)


def test_idle_connections_are_taken_last_in_first_out(run: Run) -> None:
    async def main(h: Harness) -> None:
        first, second = h.start(), h.start()
        peers = [await h.backend.accept(), await h.backend.accept()]
        for n, peer in enumerate(peers):
            await peer.respond(response(b"x", headers=[f"x-peer: {n}"]))
        by_peer = {r.header("x-peer"): r for r in await asyncio.gather(first, second)}
        await read_all(by_peer["0"])  # released first
        await read_all(by_peer["1"])  # released last: taken next
        assert h.idle == 2

        for _ in range(2):
            task = h.start()
            await peers[1].respond(response(b"y"))
            await read_all(await task)
        assert h.idle == 2

        # Two at once take both, still without a new connection.
        tasks = [h.start(), h.start()]
        for peer in peers:
            await peer.respond(response(b"z"))
        for resp in await asyncio.gather(*tasks):
            await read_all(resp)
        assert h.backend.accepted == 2
        assert h.idle == 2

    run(main)


def test_keepalive_expiry_uses_the_injected_clock(run: Run) -> None:
    now = [100.0]
    pool = ConnectionPool(keepalive_expiry_s=30.0, clock=lambda: now[0])

    async def main(h: Harness) -> None:
        task = h.start()
        first = await h.backend.accept()
        await first.respond(response(b"a"))
        await read_all(await task)  # idle since 100

        now[0] = 129.5  # still fresh: reused, idle again since 129.5
        task = h.start()
        await first.respond(response(b"b"))
        await read_all(await task)
        assert h.backend.accepted == 1

        now[0] = 159.5  # exactly 30 s idle: expired, closed, replaced
        task = h.start()
        second = await h.backend.accept()
        await first.expect_client_gone()
        await second.respond(response(b"c"))
        assert await read_all(await task) == b"c"
        assert h.idle == 1

    run(main, pool=pool)


def test_at_most_max_idle_connections_are_kept(run: Run) -> None:
    async def main(h: Harness) -> None:
        tasks = [h.start(), h.start(), h.start()]
        peers = [await h.backend.accept() for _ in tasks]
        for n, peer in enumerate(peers):
            await peer.respond(response(b"x", headers=[f"x-peer: {n}"]))
        by_peer = {r.header("x-peer"): r for r in await asyncio.gather(*tasks)}
        for key in "201":
            await read_all(by_peer[key])
        assert h.idle == 2
        await peers[1].expect_client_gone()  # released when the pool was full

        tasks = [h.start(), h.start()]
        await peers[0].respond(response(b"y"))  # last released, first taken
        await peers[2].respond(response(b"y"))
        for resp in await asyncio.gather(*tasks):
            await read_all(resp)
        assert h.backend.accepted == 3

    run(main, pool=ConnectionPool(max_idle_per_origin=2))


def test_idle_connections_are_shared_per_host_and_port(run: Run) -> None:
    async def main(h: Harness) -> None:
        task = h.start()
        peer = await h.backend.accept()
        await peer.respond(response(b"a"))
        await read_all(await task)

        other_base = h.backend.origin("/other")
        assert h.pool.idle_count(other_base) == 1  # the base path is not part of the key
        assert h.pool.idle_count(Origin("http", "localhost", h.backend.port, "")) == 0
        assert h.pool.idle_count(Origin("https", "127.0.0.1", h.backend.port, "")) == 0

        task = h.start("/v1/x", origin=other_base)
        request = await peer.respond(response(b"b"))
        assert request.startswith(b"POST /other/v1/x HTTP/1.1\r\n")
        assert await read_all(await task) == b"b"

    run(main)


def test_pool_close_drops_idle_connections(run: Run) -> None:
    async def main(h: Harness) -> None:
        task = h.start()
        peer = await h.backend.accept()
        await peer.respond(response(b"a"))
        await read_all(await task)
        assert h.idle == 1
        h.pool.close()
        assert h.idle == 0
        await peer.expect_client_gone()

    run(main)


# --- stale connections and retries ------------------------------------------------------------


async def first_exchange(h: Harness) -> Peer:
    """One clean exchange, leaving its connection idle in the pool."""
    task = h.start()
    peer = await h.backend.accept()
    await peer.respond(response(b"first"))
    assert await read_all(await task) == b"first"
    assert h.idle == 1
    return peer


def test_reused_connection_closed_before_answering_is_retried(run: Run) -> None:
    async def main(h: Harness) -> None:
        stale = await first_exchange(h)
        task = h.start(body=b"payload")
        assert (await stale.read_request()).endswith(b"payload")  # the idle one was taken...
        stale.close()  # ...and closed without a byte of answer
        fresh = await h.backend.accept()
        assert (await fresh.respond(response(b"second"))).endswith(b"payload")
        assert await read_all(await task) == b"second"
        assert h.backend.accepted == 2
        assert h.idle == 1

    run(main)


def test_idle_connection_closed_by_the_server_is_replaced(run: Run) -> None:
    async def main(h: Harness) -> None:
        stale = await first_exchange(h)
        stale.close()  # the server's keep-alive timeout, right after the first answer
        # Whether the client notices the close before or after sending, the caller sees none.
        task = h.start()
        fresh = await h.backend.accept()
        await fresh.respond(response(b"second"))
        assert await read_all(await task) == b"second"
        assert h.backend.accepted == 2

    run(main)


def test_retry_happens_only_once(run: Run) -> None:
    async def main(h: Harness) -> None:
        stale = await first_exchange(h)
        task = h.start()
        await stale.read_request()
        stale.close()
        fresh = await h.backend.accept()
        await fresh.read_request()
        fresh.close()
        with pytest.raises(ProtocolFailed) as failure:
            await asyncio.wait_for(task, WAIT)
        assert failure.value.before_response
        assert h.backend.accepted == 2
        assert h.idle == 0

    run(main)


def test_fresh_connection_closed_before_answering_is_not_retried(run: Run) -> None:
    async def main(h: Harness) -> None:
        task = h.start()
        peer = await h.backend.accept()
        await peer.read_request()
        peer.close()
        with pytest.raises(ProtocolFailed) as failure:
            await asyncio.wait_for(task, WAIT)
        assert failure.value.before_response  # nothing came back, but it was not a stale one
        assert h.backend.accepted == 1
        assert h.backend.peers.empty()

    run(main)


@pytest.mark.parametrize(
    "partial",
    [b"HTTP/1.1 200 OK\r\ncontent-len", b"HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\nabc"],
    ids=["in-head", "in-body"],
)
def test_failure_after_response_bytes_is_not_retried(run: Run, partial: bytes) -> None:
    async def main(h: Harness) -> None:
        reused = await first_exchange(h)
        task = h.start()
        await reused.respond(partial)
        reused.close()
        with pytest.raises(ProtocolFailed) as failure:
            await asyncio.wait_for(body_of(task), WAIT)
        assert not failure.value.before_response
        assert h.backend.accepted == 1
        assert h.backend.peers.empty()
        assert h.idle == 0

    run(main)


@pytest.mark.parametrize(
    "cut",
    [
        b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n012",
        CHUNKED_HEAD + chunk(b"abc"),
        CHUNKED_HEAD + b"5\r\nab",
    ],
    ids=["content-length", "chunked-no-last-chunk", "chunked-mid-chunk"],
)
def test_body_cut_short_is_protocol_failed(run: Run, cut: bytes) -> None:
    async def main(h: Harness) -> None:
        task = h.start()
        peer = await h.backend.accept()
        await peer.respond(cut)
        resp = await task
        peer.close()
        with pytest.raises(ProtocolFailed, match="closed") as failure:
            await read_all(resp)
        assert not failure.value.before_response
        assert h.idle == 0

    run(main)


# --- abort and cancellation -------------------------------------------------------------------


def test_abort_drops_the_connection_at_once(run: Run) -> None:
    async def main(h: Harness) -> None:
        task = h.start()
        peer = await h.backend.accept()
        await peer.respond(CHUNKED_HEAD + chunk(b"token"))
        resp = await task
        assert await next_bytes(aiter(resp.chunks()), 5) == b"token"
        resp.abort()
        await peer.expect_client_gone()  # how vLLM learns its client left
        resp.close()  # no effect after abort
        assert h.idle == 0

    run(main)


def test_cancel_before_the_head_closes_the_connection(run: Run) -> None:
    async def main(h: Harness) -> None:
        task = h.start()
        peer = await h.backend.accept()
        await peer.read_request()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await peer.expect_client_gone()
        assert h.idle == 0

    run(main)


def test_cancel_on_a_reused_connection_closes_it(run: Run) -> None:
    async def main(h: Harness) -> None:
        peer = await first_exchange(h)
        task = h.start()
        await peer.read_request()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await peer.expect_client_gone()
        assert h.idle == 0
        assert h.backend.peers.empty()  # cancelled means no retry

    run(main)


# --- protocol and connect failures ------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        b"garbage\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ncontent-length: ten\r\n\r\n",
        b"HTTP/1.1 2000 OK\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nbad header line\r\n\r\n",
    ],
    ids=["not-http", "bad-length", "bad-status", "bad-header"],
)
def test_invalid_head_is_protocol_failed(run: Run, answer: bytes) -> None:
    async def main(h: Harness) -> None:
        task = h.start()
        peer = await h.backend.accept()
        await peer.respond(answer)
        with pytest.raises(ProtocolFailed, match="invalid HTTP") as failure:
            await asyncio.wait_for(task, WAIT)
        assert not failure.value.before_response
        await peer.expect_client_gone()
        assert h.idle == 0

    run(main)


def test_invalid_chunk_is_protocol_failed(run: Run) -> None:
    async def main(h: Harness) -> None:
        task = h.start()
        peer = await h.backend.accept()
        await peer.respond(CHUNKED_HEAD + chunk(b"ok"))
        resp = await task
        chunks = aiter(resp.chunks())
        assert await next_bytes(chunks, 2) == b"ok"
        peer.send(b"zz\r\nnot a chunk\r\n")
        with pytest.raises(ProtocolFailed, match="invalid HTTP"):
            await asyncio.wait_for(anext(chunks), WAIT)
        await peer.expect_client_gone()
        resp.close()
        assert h.idle == 0

    run(main)


@contextlib.contextmanager
def refusing_port() -> Iterator[int]:
    """A port bound on 127.0.0.1 with nothing listening: connecting is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


@contextlib.contextmanager
def unanswering_port() -> Iterator[int]:
    """A listening port whose accept queue is full: a connect gets no answer (Linux drops
    the SYN), so only the connect timeout ends it."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port), timeout=WAIT):
            yield port


def test_connection_refused_is_connect_failed(run: Run) -> None:
    async def main(h: Harness) -> None:
        with refusing_port() as port:
            origin = Origin.from_url(f"http://127.0.0.1:{port}")
            with pytest.raises(ConnectFailed, match=f"127.0.0.1:{port}") as failure:
                await h.pool.request(origin, "POST", "/", [], b"", connect_timeout_s=WAIT)
        assert failure.value.before_response
        assert isinstance(failure.value, UpstreamIOError)
        assert h.pool.idle_count(origin) == 0

    run(main)


def test_connect_timeout_is_connect_failed(run: Run) -> None:
    async def main(h: Harness) -> None:
        with unanswering_port() as port:
            origin = Origin.from_url(f"http://127.0.0.1:{port}")
            with pytest.raises(ConnectFailed, match="timed out") as failure:
                await h.pool.request(origin, "POST", "/", [], b"", connect_timeout_s=0.05)
        assert failure.value.before_response

    run(main)


# --- backpressure -----------------------------------------------------------------------------


class TransportSpy:
    """Stands in for a transport, noting pause_reading/resume_reading."""

    def __init__(self, inner: asyncio.BaseTransport, log: list[str], paused: asyncio.Event):
        self._inner = cast(asyncio.Transport, inner)
        self._log = log
        self._paused = paused

    def pause_reading(self) -> None:
        self._log.append("pause")
        self._paused.set()
        self._inner.pause_reading()

    def resume_reading(self) -> None:
        self._log.append("resume")
        self._inner.resume_reading()

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)


def test_backpressure_pauses_reading_and_keeps_every_byte_in_order(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    payload = random.Random(11).randbytes(6 * HIGH_WATER)

    async def main(h: Harness) -> None:
        log: list[str] = []
        paused = asyncio.Event()

        class Spied(Http1Connection):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                spy = TransportSpy(transport, log, paused)
                super().connection_made(cast(asyncio.BaseTransport, spy))

        monkeypatch.setattr(pool_module, "Http1Connection", Spied)

        task = h.start()
        peer = await h.backend.accept()

        async def serve() -> None:
            await peer.read_request()
            peer.send(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % len(payload))
            for start in range(0, len(payload), 100_000):
                peer.send(payload[start : start + 100_000])
            await peer.writer.drain()

        server = asyncio.create_task(serve())
        resp = await task
        await asyncio.wait_for(paused.wait(), WAIT)  # before the consumer read a byte
        assert log == ["pause"]

        received = bytearray()
        async for piece in resp.chunks():
            received += piece
        assert received == payload
        assert "resume" in log
        assert log[0] == "pause"
        await asyncio.wait_for(server, WAIT)
        resp.close()
        assert h.idle == 1

    run(main)


# --- Origin.from_url --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "origin", "host_header"),
    [
        ("http://127.0.0.1:8000", Origin("http", "127.0.0.1", 8000, ""), "127.0.0.1:8000"),
        ("http://backend", Origin("http", "backend", 80, ""), "backend"),
        ("http://backend:80/", Origin("http", "backend", 80, ""), "backend"),
        ("https://backend", Origin("https", "backend", 443, ""), "backend"),
        ("https://backend:8443/v1/", Origin("https", "backend", 8443, ""), "backend:8443"),
        ("https://backend/openai/v1", Origin("https", "backend", 443, "/openai"), "backend"),
        ("http://backend:443", Origin("http", "backend", 443, ""), "backend:443"),
        ("https://backend:80", Origin("https", "backend", 80, ""), "backend:80"),
        ("http://gpu-1:8000/a/b", Origin("http", "gpu-1", 8000, "/a/b"), "gpu-1:8000"),
        (
            "HTTP://Backend.Example:81",
            Origin("http", "backend.example", 81, ""),
            "backend.example:81",
        ),
        ("http://[::1]:8000/x", Origin("http", "::1", 8000, "/x"), "[::1]:8000"),
        ("https://[2001:db8::1]", Origin("https", "2001:db8::1", 443, ""), "[2001:db8::1]"),
        ("http://[::1]", Origin("http", "::1", 80, ""), "[::1]"),
    ],
)
def test_origin_from_url(url: str, origin: Origin, host_header: str) -> None:
    assert Origin.from_url(url) == origin
    assert Origin.from_url(url).host_header == host_header


@pytest.mark.parametrize(
    "url",
    [
        "",
        "backend:8000",
        "/v1/chat",
        "ftp://backend",
        "ws://backend:8000",
        "http://",
        "http:///path",
        "http://backend:port",
        "http://backend:70000",
        "http://[::1",
    ],
)
def test_origin_from_bad_url_is_value_error(url: str) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - urlsplit's messages vary
        Origin.from_url(url)
