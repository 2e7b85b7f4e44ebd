"""An event-stream response that sends each chunk as it comes and stops when the client goes.

Unlike Starlette's StreamingResponse it starts no task group per response: the request's
single ``DisconnectWatch`` already cancels this task when the client leaves.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Callable, Mapping
from typing import Any

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from gateway.errors import ServiceUnavailable
from gateway.openai import sse
from gateway.openai.disconnect import DisconnectWatch

_SHUTTING_DOWN = ServiceUnavailable(
    "The gateway is shutting down; retry the request.", code="shutting_down"
)


def _chat_goodbye(error: dict[str, Any]) -> bytes:
    return sse.frame_json(error) + sse.DONE


class EventStreamResponse(Response):
    media_type = "text/event-stream"

    def __init__(
        self,
        body: AsyncGenerator[bytes, None],
        watch: DisconnectWatch,
        headers: Mapping[str, str],
        goodbye: Callable[[dict[str, Any]], bytes] | None = None,
    ) -> None:
        """``goodbye`` frames the error that ends a stream the server cuts short (default:
        an OpenAI chat stream's error event and ``data: [DONE]``)."""
        self.status_code = 200
        self.background = None
        self._events = body
        self._watch = watch
        self._goodbye = goodbye or _chat_goodbye
        self.init_headers({**headers, "cache-control": "no-cache", "x-accel-buffering": "no"})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
            async for chunk in self._events:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except asyncio.CancelledError:
            if not self._watch.absorb():
                # Cancelled by the server itself (shutdown past its drain time): end the
                # stream properly so the client sees why, then keep cancelling.
                await self._say_goodbye(send)
                raise
        finally:
            self._watch.stop()
            await self._events.aclose()

    async def _say_goodbye(self, send: Send) -> None:
        body = self._goodbye(_SHUTTING_DOWN.body())
        with contextlib.suppress(OSError, RuntimeError):
            await send({"type": "http.response.body", "body": body, "more_body": False})
