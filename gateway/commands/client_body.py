"""The gateway's uvicorn protocol: a streamed body written to the client without the ASGI ``send``.

uvicorn's ``send`` costs a message dict, a coroutine and its checks per body chunk; a stream
relays one chunk per token, and the relay (``path/exchange/stream.py``) can write a token
from the upstream connection's own callback, where no coroutine runs at all. So the protocol
hands each request's scope a ``ClientBody`` (``openai/streaming.py``), under
``extensions[CLIENT_BODY]``: ``write`` frames a chunk as uvicorn does for a chunked body
(``<size in hex>\\r\\n<bytes>\\r\\n``) and writes it to the connection's transport.

Algorithm: ``ready`` is True only while the response has started with a chunked body (uvicorn
chose chunked framing: no ``content-length``, not a ``HEAD``), has not ended, the client is
connected and the transport's write buffer is under its high-water mark (uvicorn's
``FlowControl`` is told of ``pause_writing``). When it is False the relay uses ``send``,
which waits for the buffer to drain, or does nothing once the client is gone: backpressure and
disconnects stay uvicorn's. uvicorn keeps no count of a chunked body's bytes, so the body
chunks it never sees leave its state right; the end of the body (the terminating chunk, the
keep-alive decision) still goes through ``send``.

The protocol is ``HeaderTimeoutProtocol`` (``security/slow_clients.py``) with this one
addition, made once per request when its headers are complete.
"""

from __future__ import annotations

from typing import Any

from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.protocols.http.httptools_impl import RequestResponseCycle

from gateway.openai.streaming import CLIENT_BODY
from gateway.security.slow_clients import HeaderTimeoutProtocol


class CycleBody:
    """A ``ClientBody`` over one uvicorn request-response cycle."""

    __slots__ = ("_cycle", "_flow", "_transport")

    def __init__(self, cycle: RequestResponseCycle, flow: FlowControl) -> None:
        self._cycle = cycle
        self._flow = flow
        self._transport = cycle.transport

    def ready(self) -> bool:
        cycle = self._cycle
        return (
            cycle.chunked_encoding is True
            and not self._flow.write_paused
            and not cycle.disconnected
            and not cycle.response_complete
        )

    def write(self, chunk: bytes) -> None:
        self._transport.write(b"%x\r\n%b\r\n" % (len(chunk), chunk))


class ClientBodyProtocol(HeaderTimeoutProtocol):
    """``HeaderTimeoutProtocol`` whose requests' scopes carry a ``CycleBody``."""

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        cycle = self.cycle
        # None or an earlier request's cycle when no new one was made (a WebSocket upgrade).
        if cycle is not None and cycle.scope is self.scope:
            extensions: dict[str, Any] = self.scope.setdefault("extensions", {})
            extensions[CLIENT_BODY] = CycleBody(cycle, self.flow)


def serving_protocol(header_timeout_s: float) -> type[ClientBodyProtocol]:
    """The protocol class the gateway is served with (uvicorn takes a class, not an instance),
    with its header timeout."""
    return type("ClientBodyProtocol", (ClientBodyProtocol,), {"header_timeout_s": header_timeout_s})
