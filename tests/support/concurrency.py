"""Count the requests an ASGI app is serving at once (e.g. a fake upstream behind gateways)."""

from __future__ import annotations

import threading
from typing import Any


class ConcurrencyProbe:
    """ASGI wrapper: ``current`` and ``peak`` generation requests in flight, thread-safe."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self.current = 0
        self.peak = 0
        self.total = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not scope["path"].endswith("completions"):
            await self.app(scope, receive, send)
            return
        self._move(+1)
        done = False

        async def counted_send(message: Any) -> None:
            nonlocal done
            final = message["type"] == "http.response.body" and not message.get("more_body")
            if final and not done:
                # Counted out before the last bytes leave: the client cannot have seen the
                # end (and started another request) while this one still counts.
                done = True
                self._move(-1)
            await send(message)

        try:
            await self.app(scope, receive, counted_send)
        finally:
            if not done:
                self._move(-1)

    def reset_peak(self) -> None:
        with self._lock:
            self.peak = self.current

    def wait_for(self, current: int, timeout_s: float) -> None:
        """Block until exactly ``current`` requests are in flight."""
        with self._changed:
            if not self._changed.wait_for(lambda: self.current == current, timeout_s):
                raise TimeoutError(f"in flight stayed {self.current}, wanted {current}")

    def wait_total(self, total: int, timeout_s: float) -> None:
        """Block until ``total`` requests have arrived in all."""
        with self._changed:
            if not self._changed.wait_for(lambda: self.total >= total, timeout_s):
                raise TimeoutError(f"{self.total} requests arrived, wanted {total}")

    def _move(self, delta: int) -> None:
        with self._changed:
            self.current += delta
            self.total += max(delta, 0)
            self.peak = max(self.peak, self.current)
            self._changed.notify_all()
