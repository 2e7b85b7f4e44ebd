"""A CONNECT tunnel through an HTTP proxy, then TLS to the backend inside it.

The proxy's answer to ``CONNECT host:port`` is read up to its blank line; any 2xx opens the
tunnel, anything else fails the connection with the proxy's status line. The transport is
then upgraded to TLS (``loop.start_tls``) with the backend's own context and name, and handed
to the connection's protocol.
"""

from __future__ import annotations

import asyncio
import ssl

from gateway.upstream.connection import ConnectFailed, Http1Connection
from gateway.upstream.origin import Origin, ProxyRoute

_MAX_HEAD = 16 * 1024


class _ConnectReply(asyncio.Protocol):
    """Collects the proxy's reply to CONNECT; the TLS layer takes the transport after."""

    def __init__(self) -> None:
        self.head: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self._buffer = b""

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        end = self._buffer.find(b"\r\n\r\n")
        if self.head.done():
            return
        if end >= 0:
            self.head.set_result(self._buffer[:end])
        elif len(self._buffer) > _MAX_HEAD:
            self.head.set_exception(
                ConnectFailed("the proxy's reply to CONNECT is too long", before_response=True)
            )

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.head.done():
            self.head.set_exception(
                ConnectFailed(
                    "the proxy closed the connection during CONNECT", before_response=True
                )
            )


async def open_tunnel(
    origin: Origin, proxy: ProxyRoute, conn: Http1Connection, context: ssl.SSLContext
) -> asyncio.BaseTransport:
    """A TLS transport to ``origin`` through ``proxy``, already given to ``conn``."""
    loop = asyncio.get_running_loop()
    transport, reply = await loop.create_connection(_ConnectReply, proxy.host, proxy.port)
    try:
        host = f"[{origin.host}]" if ":" in origin.host else origin.host
        authority = f"{host}:{origin.port}"  # always with the port, as CONNECT wants
        lines = [f"CONNECT {authority} HTTP/1.1", f"host: {authority}"]
        if proxy.authorization is not None:
            lines.append(f"proxy-authorization: {proxy.authorization}")
        transport.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        status = (await reply.head).split(b"\r\n", 1)[0].decode("latin-1", "replace")
        parts = status.split(" ", 2)
        if len(parts) < 2 or not parts[1].startswith("2"):
            raise ConnectFailed(
                f"proxy {proxy.display} refused CONNECT {authority}: {status}", before_response=True
            )
        tls = await loop.start_tls(transport, conn, context, server_hostname=origin.host)
    except BaseException:
        transport.abort()
        raise
    if tls is None:  # only when the transport closed under us
        raise ConnectFailed("the tunnel closed during the TLS handshake", before_response=True)
    return tls
