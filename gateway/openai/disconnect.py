"""Notice a client that leaves, and stop working for it at once.

Algorithm: once the request body is read, the serving task is told when the connection is
lost: the only thing left to come from the client is its going. When it goes, the task
serving the request is cancelled wherever it is (waiting for a backend's first byte, relaying
a stream, reading a whole answer), so its ``finally`` blocks close the upstream connection and
the backend stops generating. The serving task tells its own cancellation apart from any other
with ``absorb``.

Two ways to be told: a server that offers a ``DisconnectHook`` (the gateway's own uvicorn
protocol, ``commands/client_body.py``, under ``extensions[DISCONNECT_HOOK]``) calls back from
its ``connection_lost``, which costs nothing per request but the registration; any other
server is watched by one task waiting on the ASGI ``receive`` channel, whose only message left
to come is ``http.disconnect``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol

from starlette.types import Receive

# The key of a ``DisconnectHook`` in an ASGI scope's ``extensions``.
DISCONNECT_HOOK = "gateway.disconnect"


class DisconnectHook(Protocol):
    """A server's own notice of a request's client leaving."""

    def on_disconnect(self, callback: Callable[[], None] | None) -> None:
        """Call ``callback`` (at once if the client is gone already) when the client leaves
        before the response ends; None: no call any more. Reading resumes (a paused read
        would never see the connection close)."""
        ...


class DisconnectWatch:
    """Cancels the current task when the client disconnects."""

    def __init__(self, receive: Receive, hook: DisconnectHook | None = None) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._task = task
        self.disconnected = False
        self._hook = hook
        self._watcher: asyncio.Task[None] | None = None
        if hook is not None:
            hook.on_disconnect(self._gone)
        else:
            self._watcher = asyncio.get_running_loop().create_task(self._watch(receive))

    async def _watch(self, receive: Receive) -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                self._gone()
                return

    def _gone(self) -> None:
        self.disconnected = True
        self._task.cancel()

    def absorb(self) -> bool:
        """In ``except CancelledError``: True (and uncancelled) if the client left."""
        if self.disconnected and self._task.cancelling():
            self._task.uncancel()
            return True
        return False

    def stop(self) -> None:
        if self._hook is not None:
            self._hook.on_disconnect(None)
        if self._watcher is not None:
            self._watcher.cancel()
