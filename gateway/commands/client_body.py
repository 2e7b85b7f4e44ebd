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

The same object is the request's ``DisconnectHook`` (``openai/disconnect.py``, under
``extensions[DISCONNECT_HOOK]``): the protocol's ``connection_lost`` calls the request's watch
back when the client leaves before the response ends (uvicorn marks the cycle ``disconnected``
then), so no task waits on ``receive`` for it.

The protocol is ``HeaderTimeoutProtocol`` (``security/slow_clients.py``) with these additions,
made once per request when its headers are complete.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.protocols.http.httptools_impl import RequestResponseCycle

from gateway.openai.disconnect import DISCONNECT_HOOK
from gateway.openai.streaming import CLIENT_BODY
from gateway.security.slow_clients import HeaderTimeoutProtocol


class CycleBody:
    """A ``ClientBody`` and ``DisconnectHook`` over one uvicorn request-response cycle."""

    __slots__ = ("_cycle", "_flow", "_gone", "_transport")

    def __init__(self, cycle: RequestResponseCycle, flow: FlowControl) -> None:
        self._cycle = cycle
        self._flow = flow
        self._transport = cycle.transport
        self._gone: Callable[[], None] | None = None

    def on_disconnect(self, callback: Callable[[], None] | None) -> None:
        self._gone = callback
        if callback is not None:
            self._flow.resume_reading()  # as uvicorn's ``receive`` does before it waits
            if self._cycle.disconnected:
                self._gone = None
                callback()

    def lost(self, cycle: RequestResponseCycle | None) -> None:
        """The connection was lost while ``cycle`` was the protocol's."""
        callback = self._gone
        if callback is not None and cycle is self._cycle and cycle.disconnected:
            self._gone = None
            callback()

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

    _body: CycleBody | None = None  # the latest request's

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        cycle = self.cycle
        # None or an earlier request's cycle when no new one was made (a WebSocket upgrade).
        if cycle is not None and cycle.scope is self.scope:
            extensions: dict[str, Any] = self.scope.setdefault("extensions", {})
            body = self._body = CycleBody(cycle, self.flow)
            extensions[CLIENT_BODY] = extensions[DISCONNECT_HOOK] = body

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        if self._body is not None:
            self._body.lost(self.cycle)


def serving_protocol(header_timeout_s: float) -> type[ClientBodyProtocol]:
    """The protocol class the gateway is served with (uvicorn takes a class, not an instance),
    with its header timeout."""
    return type("ClientBodyProtocol", (ClientBodyProtocol,), {"header_timeout_s": header_timeout_s})
