"""A header read timeout for uvicorn's httptools protocol (slowloris protection).

uvicorn bounds the idle time between keep-alive requests but not the time a client may take
to send a request's headers: a client trickling one header byte at a time would hold its
connection, and a slot of ``limit_concurrency``, forever. Algorithm: a timer of
``header_timeout_s`` is armed when the connection opens and when a request begins (first
byte), and disarmed once the request's headers are complete; if it fires, the connection is
closed. Body reads are bounded separately by ``server.body_timeout_s`` (``gateway/body.py``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class HeaderTimeoutProtocol(HttpToolsProtocol):
    """``HttpToolsProtocol`` that closes connections whose request headers arrive too slowly."""

    header_timeout_s: float = 10.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._header_timer is None:
            self._arm()

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()

    def _arm(self) -> None:
        self._disarm()
        self._header_timer = self.loop.call_later(self.header_timeout_s, self._expire)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _expire(self) -> None:
        self._header_timer = None
        if not self.transport.is_closing():
            self.transport.close()


def header_timeout_protocol(seconds: float) -> type[HeaderTimeoutProtocol]:
    """A protocol class with the given header timeout (uvicorn takes a class, not an instance)."""
    return type("HeaderTimeoutProtocol", (HeaderTimeoutProtocol,), {"header_timeout_s": seconds})
