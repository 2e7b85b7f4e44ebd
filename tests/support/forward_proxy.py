"""A small HTTP forward proxy on 127.0.0.1 for tests, on its own thread and event loop.

It serves CONNECT (a tunnel, bytes piped both ways) and absolute-form requests (forwarded to
the origin with ``connection: close``, one request per client connection), and records each
request line with its ``proxy-authorization`` header so a test can see what went through it.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import urlsplit


@dataclass
class ProxyLog:
    lines: list[str] = field(default_factory=list)  # "CONNECT 127.0.0.1:4430", "GET http://..."
    authorizations: list[str | None] = field(default_factory=list)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()


async def _relay(
    client: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter],
) -> None:
    await asyncio.gather(_pipe(client[0], upstream[1]), _pipe(upstream[0], client[1]))


async def _handle(
    log: ProxyLog, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        writer.close()
        return
    first, *rest = head.decode("latin-1").split("\r\n")
    headers = [line for line in rest if line]
    auth = next(
        (
            v.strip()
            for n, _, v in (h.partition(":") for h in headers)
            if n.lower() == "proxy-authorization"
        ),
        None,
    )
    log.lines.append(first)
    log.authorizations.append(auth)
    method, target, _ = first.split(" ", 2)
    if method == "CONNECT":
        host, _, port = target.rpartition(":")
        upstream = await asyncio.open_connection(host.strip("[]"), int(port))
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await _relay((reader, writer), upstream)
        return
    url = urlsplit(target)
    upstream = await asyncio.open_connection(url.hostname, url.port or 80)
    kept = [
        h
        for h in headers
        if h.split(":", 1)[0].lower() not in ("proxy-authorization", "connection")
    ]
    path = url.path + (f"?{url.query}" if url.query else "")
    forwarded = "\r\n".join([f"{method} {path} HTTP/1.1", *kept, "connection: close", "", ""])
    upstream[1].write(forwarded.encode("latin-1"))
    await _relay((reader, writer), upstream)


@contextlib.contextmanager
def forward_proxy() -> Iterator[tuple[str, ProxyLog]]:
    """Run the proxy; yield its URL (``http://127.0.0.1:PORT``) and what it saw."""
    log = ProxyLog()
    loop = asyncio.new_event_loop()
    started = threading.Event()
    holder: dict[str, asyncio.Server] = {}

    async def start() -> None:
        holder["server"] = await asyncio.start_server(
            lambda r, w: _handle(log, r, w), "127.0.0.1", 0
        )
        started.set()

    def run() -> None:
        loop.run_until_complete(start())
        loop.run_forever()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert started.wait(10), "the proxy did not start"
    port = holder["server"].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", log
    finally:

        async def stop() -> None:
            holder["server"].close()
            for task in asyncio.all_tasks() - {asyncio.current_task()}:
                task.cancel()

        asyncio.run_coroutine_threadsafe(stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
