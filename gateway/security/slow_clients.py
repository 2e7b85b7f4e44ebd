"""A header read timeout and an OpenAI-shaped connection cap for uvicorn's httptools protocol.

uvicorn bounds the idle time between keep-alive requests but not the time a client may take
to send a request's headers: a client trickling one header byte at a time would hold its
connection, and a slot of ``limit_concurrency``, forever. Algorithm: a timer of
``header_timeout_s`` is armed when the connection opens and when a request begins (first
byte), and disarmed once the request's headers are complete; if it fires, the connection is
closed. Body reads are bounded separately by ``server.body_timeout_s`` (``gateway/body.py``).

The connection cap is uvicorn's ``limit_concurrency`` rule (open connections or running
requests at the cap: answer 503 and close), taken over here only to answer with the
gateway's OpenAI error body and ``Retry-After`` instead of uvicorn's plain text; so is its
400 to bytes that are no HTTP request, so that every error the gateway sends has that body.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn._types import ASGIReceiveCallable, ASGISendCallable, Scope
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from gateway.errors import InvalidRequest, ServiceUnavailable


async def over_capacity(scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable) -> None:
    error = ServiceUnavailable(
        "The gateway is at its connection limit; retry shortly.",
        code="too_many_connections",
        retry_after_s=1,
    )
    body = error.body_bytes()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"retry-after", b"1"),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": 503, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


class HeaderTimeoutProtocol(HttpToolsProtocol):
    """``HttpToolsProtocol`` that closes connections whose request headers arrive too slowly."""

    header_timeout_s: float = 10.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_timer: asyncio.TimerHandle | None = None
        # uvicorn's own check would answer in plain text: the cap is applied below instead.
        self._cap, self.limit_concurrency = self.limit_concurrency, None

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
        cap = self._cap
        if cap is None or (len(self.connections) < cap and len(self.tasks) < cap):
            super().on_headers_complete()
            return
        self.logger.warning("connection limit %d reached: 503", cap)
        app, self.app = self.app, over_capacity
        try:
            super().on_headers_complete()  # runs over_capacity for this request only
        finally:
            self.app = app

    def send_400_response(self, msg: str) -> None:
        body = InvalidRequest(msg, code="invalid_http").body_bytes()
        head = [b"HTTP/1.1 400 Bad Request\r\n"]
        head += [
            name + b": " + value + b"\r\n" for name, value in self.server_state.default_headers
        ]
        head.append(b"content-type: application/json\r\n")
        head.append(b"content-length: %d\r\nconnection: close\r\n\r\n" % len(body))
        self.transport.write(b"".join([*head, body]))
        self.transport.close()

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
