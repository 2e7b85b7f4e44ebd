"""Notice a client that leaves, and stop working for it at once.

Algorithm: once the request body is read, one task waits on the ASGI ``receive`` channel; the
only message left to come is ``http.disconnect``. When it comes, the task serving the request
is cancelled wherever it is (waiting for a backend's first byte, relaying a stream, reading
a whole answer), so its ``finally`` blocks close the upstream connection and the backend stops
generating. The serving task tells its own cancellation apart from any other with ``absorb``.
"""

from __future__ import annotations

import asyncio

from starlette.types import Receive


class DisconnectWatch:
    """Cancels the current task when the client disconnects."""

    def __init__(self, receive: Receive) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._task = task
        self.disconnected = False
        self._watcher = asyncio.get_running_loop().create_task(self._watch(receive))

    async def _watch(self, receive: Receive) -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                self.disconnected = True
                self._task.cancel()
                return

    def absorb(self) -> bool:
        """In ``except CancelledError``: True (and uncancelled) if the client left."""
        if self.disconnected and self._task.cancelling():
            self._task.uncancel()
            return True
        return False

    def stop(self) -> None:
        self._watcher.cancel()
