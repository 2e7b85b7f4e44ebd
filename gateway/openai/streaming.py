"""An event-stream response that sends each chunk as it comes and stops when the client goes.

Unlike Starlette's StreamingResponse it starts no task group per response: the request's
single ``DisconnectWatch`` already cancels this task when the client leaves. The body comes
from an ``EventSource`` that writes as it reads (one loop, no generator between the two), and
its last bytes leave with the end of the body, in one write.

The app serves the endpoints that stream without Starlette's middlewares (``gateway/app.py``),
so ``send`` here is the server's own: each chunk costs one call, not three wrappers deep.
A server may offer more (``CLIENT_BODY`` in the scope's ``extensions``, the gateway's own
uvicorn protocol, ``commands/client_body.py``): a ``ClientBody`` that writes body chunks to
the client's connection at once, past ``send``. The source uses it for what it relays while the
client keeps up; the response's head and end still go through ``send``, so the server keeps
its own account of the response (keep-alive, the terminating chunk). Served any other way
(tests that call the app, another server) there is none and every chunk goes through ``send``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from gateway.errors import ServiceUnavailable
from gateway.openai import sse
from gateway.openai.disconnect import DisconnectWatch

_SHUTTING_DOWN = ServiceUnavailable(
    "The gateway is shutting down; retry the request.", code="shutting_down"
)

Write = Callable[[bytes], Awaitable[None]]

# The key of a ``ClientBody`` in an ASGI scope's ``extensions``.
CLIENT_BODY = "gateway.client_body"


class ClientBody(Protocol):
    """The client's connection, for a response already started with a chunked body."""

    def ready(self) -> bool:
        """Whether ``write`` may be called now: the client is connected, its write buffer
        under its high-water mark, the response's body chunked and not ended."""
        ...

    def write(self, chunk: bytes) -> None:
        """Write ``chunk`` (not empty) as the body's next chunk, framed; only when ``ready``."""
        ...


class EventSource(Protocol):
    """Where a stream's events come from (``path/exchange/stream.py``)."""

    async def pump(self, write: Write, body: ClientBody | None) -> bytes:
        """Write the events as they come (through ``body`` when there is one and it is
        ready, else ``write``); return the stream's last bytes."""
        ...

    def goodbye(self, error: dict[str, Any]) -> bytes:
        """The bytes that end a stream the server cuts short with ``error`` (an error body)."""
        ...

    def abandon(self) -> None:
        """The response was never sent: let go of the exchange (idempotent)."""
        ...


class EventStreamResponse(Response):
    media_type = "text/event-stream"

    def __init__(
        self, source: EventSource, watch: DisconnectWatch, headers: Mapping[str, str]
    ) -> None:
        self.status_code = 200
        self.background = None
        self._source = source
        self._watch = watch
        self.init_headers({**headers, "cache-control": "no-cache", "x-accel-buffering": "no"})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def write(chunk: bytes) -> None:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})

        try:
            await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
            extensions = scope.get("extensions")
            body = None if extensions is None else extensions.get(CLIENT_BODY)
            last = await self._source.pump(write, body)
            await send({"type": "http.response.body", "body": last, "more_body": False})
        except asyncio.CancelledError:
            if not self._watch.absorb():
                # Cancelled by the server itself (shutdown past its drain time): end the
                # stream properly so the client sees why, then keep cancelling.
                await self._say_goodbye(send)
                raise
        finally:
            self._watch.stop()
            self._source.abandon()

    async def _say_goodbye(self, send: Send) -> None:
        body = self._source.goodbye(_SHUTTING_DOWN.body())
        with contextlib.suppress(OSError, RuntimeError):
            await send({"type": "http.response.body", "body": body, "more_body": False})


class WholeStream:
    """An event stream known in full (a cache hit's): all of it in one write, with the end of
    the body."""

    __slots__ = ("_body",)

    def __init__(self, body: bytes) -> None:
        self._body = body

    async def pump(self, write: Write, body: ClientBody | None) -> bytes:
        return self._body

    def goodbye(self, error: dict[str, Any]) -> bytes:
        return sse.frame_json(error)  # no [DONE]: the stream did not end whole

    def abandon(self) -> None:
        return None
