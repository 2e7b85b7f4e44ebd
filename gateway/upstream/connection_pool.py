"""Keep-alive connections per backend origin.

Algorithm: idle connections are kept per origin in LIFO order (the most recently used is the
warmest and least likely to have been closed by the server), at most
``max_idle_per_origin`` of them, each for at most ``keepalive_expiry_s``. A request takes an
idle connection or opens one; active connections are not capped here because each backend's
``max_inflight`` already bounds them. A request on a reused connection that the server had
closed before answering is retried once on a fresh connection (nothing was processed).

Connections are kept apart by scheme, host, port, TLS settings and proxy, so two backends
on one address with different TLS settings never share one. Through a proxy, plain-http
requests travel on a connection to the proxy and https ones in a CONNECT tunnel.

Parameters: ``max_idle_per_origin``, ``keepalive_expiry_s``, ``clock``.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Callable, Hashable, Sequence

from gateway.upstream.connection import (
    ConnectFailed,
    Http1Connection,
    UpstreamIOError,
    UpstreamResponse,
)
from gateway.upstream.origin import Origin
from gateway.upstream.tunnel import open_tunnel


class ConnectionPool:
    """Opens, reuses and closes connections to backend origins."""

    def __init__(
        self,
        *,
        max_idle_per_origin: int = 200,
        keepalive_expiry_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._max_idle = max_idle_per_origin
        self._expiry = keepalive_expiry_s
        self._clock = clock
        self._idle: dict[Hashable, list[Http1Connection]] = {}
        self._ssl: ssl.SSLContext | None = None
        self._open_count = 0

    async def request(
        self,
        origin: Origin,
        method: str,
        path: str,
        headers: Sequence[tuple[str, str]],
        body: bytes,
        *,
        connect_timeout_s: float,
    ) -> UpstreamResponse:
        headers = [*headers, *origin.proxy_headers()]
        head = _head(method, origin.target(path), origin.host_header, headers, len(body))
        conn = self._take_idle(origin)
        if conn is not None:
            try:
                return await _exchange(conn, head, body)
            except UpstreamIOError as exc:
                if not exc.before_response:
                    raise
                # The server had closed the idle connection; nothing was processed.
        conn = await self._open(origin, connect_timeout_s)
        return await _exchange(conn, head, body)

    def close(self) -> None:
        for conns in self._idle.values():
            for conn in conns:
                conn.abort()
        self._idle.clear()

    def forget(self, origin: Origin) -> None:
        """Close the idle connections to ``origin`` (a backend that is gone)."""
        for conn in self._idle.pop(_key(origin), []):
            conn.abort()

    def idle_count(self, origin: Origin) -> int:
        return len(self._idle.get(_key(origin), ()))

    def _take_idle(self, origin: Origin) -> Http1Connection | None:
        conns = self._idle.get(_key(origin))
        now = self._clock()
        while conns:
            conn = conns.pop()
            if conn.usable and now - conn.idle_since < self._expiry:
                conn.reused = True
                return conn
            conn.abort()
        return None

    async def _open(self, origin: Origin, timeout_s: float) -> Http1Connection:
        key = _key(origin)
        conn = Http1Connection(lambda c: self._release(key, c), self._on_lost)
        where = f"{origin.host}:{origin.port}"
        if origin.proxy is not None:
            where += f" through proxy {origin.proxy.display}"
        try:
            async with asyncio.timeout(timeout_s):
                transport = await self._connect(origin, conn)
        except TimeoutError:
            raise ConnectFailed(f"connect to {where} timed out", before_response=True) from None
        except OSError as exc:  # ssl.SSLError (a bad certificate) is one too
            raise ConnectFailed(
                f"connect to {where} failed: {exc.strerror or exc}", before_response=True
            ) from None
        # uvloop may call connection_made only after create_connection returns.
        conn.connection_made(transport)
        self._open_count += 1
        return conn

    async def _connect(self, origin: Origin, conn: Http1Connection) -> asyncio.BaseTransport:
        loop = asyncio.get_running_loop()
        tls = self._context(origin) if origin.scheme == "https" else None
        proxy = origin.proxy
        if proxy is not None and tls is not None:
            return await open_tunnel(origin, proxy, conn, tls)
        host, port = (proxy.host, proxy.port) if proxy is not None else (origin.host, origin.port)
        transport, _ = await loop.create_connection(
            lambda: conn, host, port, ssl=tls, server_hostname=origin.host if tls else None
        )
        return transport

    @property
    def open_connections(self) -> int:
        """Connections open now, busy or idle (for leak checks and metrics)."""
        return self._open_count

    def _on_lost(self) -> None:
        self._open_count -= 1

    def _release(self, key: Hashable, conn: Http1Connection) -> None:
        conns = self._idle.setdefault(key, [])
        if len(conns) >= self._max_idle:
            conn.abort()
            return
        conn.idle_since = self._clock()
        conns.append(conn)

    def _context(self, origin: Origin) -> ssl.SSLContext:
        if origin.ssl_context is not None:
            return origin.ssl_context
        if self._ssl is None:  # origins made without a policy (benchmarks): system CAs
            self._ssl = ssl.create_default_context()
        return self._ssl


async def _exchange(conn: Http1Connection, head: bytes, body: bytes) -> UpstreamResponse:
    try:
        conn.send(head, body)
        return await conn.read_head()
    except BaseException:
        # Cancelled or failed before the response: the backend must see us leave.
        conn.abort()
        raise


def _key(origin: Origin) -> Hashable:
    return (origin.scheme, origin.host, origin.port, origin.tls, origin.proxy)


def _head(
    method: str, target: str, host: str, headers: Sequence[tuple[str, str]], length: int
) -> bytes:
    lines = [f"{method} {target} HTTP/1.1", f"host: {host}", f"content-length: {length}"]
    for name, value in headers:
        if "\r" in value or "\n" in value or "\r" in name or "\n" in name:
            raise ValueError(f"header {name!r} contains a line break")
        lines.append(f"{name}: {value}")
    lines.append("\r\n")
    return "\r\n".join(lines).encode("latin-1")
