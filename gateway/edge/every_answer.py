"""Every answer has a request id and is counted once: the outermost layer of the app below
Starlette's last-resort error handler.

Algorithm: a pure ASGI middleware watches each HTTP answer's head as it is sent.

- The request path sets ``x-gateway-request-id`` on every answer it gives (served, replayed
  from the cache or refused) and counts it in ``gateway_requests_total`` itself, with its
  model, pool, backend and cache labels (``path/report.py``, ``path/exchange/lease.py``,
  ``path/cache.py``). An answer that arrives here with the header is left as it is.
- Any other answer gets a fresh id here (an unknown path's 404, a wrong method's 405, a
  401 from ``/v1/models``, ...), and is counted with status, model ``unknown``, pool and
  backend ``none``, unless its path is one of the gateway's own operations routes
  (``operations``: probes, scrapes, the dashboard, admin), whose traffic is the platform's,
  not the clients', and would drown the error rate.
- An exception that escapes before the head was sent (a bug of ours) is counted as a 500 and
  re-raised; Starlette's handler renders it (``error_render.internal_error``, which gives
  it an id of its own).

So ``sum by (status) (rate(gateway_requests_total[5m]))`` is every answer clients got.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.metric_labels import NO_BACKEND, NO_POOL
from gateway.metrics import GatewayMetrics

REQUEST_ID = b"x-gateway-request-id"


class EveryAnswer:
    def __init__(
        self,
        app: ASGIApp,
        metrics: GatewayMetrics,
        operations: Callable[[str], bool],
    ) -> None:
        self.app = app
        self._metrics = metrics
        self._operations = operations

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        counted = self._operations(scope.get("path", ""))
        started = False

        async def send_with_id(message: Message) -> None:
            nonlocal started, counted
            if message["type"] == "http.response.start":
                started = True
                headers = list(message.get("headers", ()))
                if not any(name.lower() == REQUEST_ID for name, _ in headers):
                    headers.append((REQUEST_ID, uuid.uuid4().hex.encode()))
                    message = {**message, "headers": headers}
                    if not counted:
                        self._count(int(message["status"]))
                counted = True
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except Exception:
            if not started and not counted:
                self._count(500)
            raise

    def _count(self, status: int) -> None:
        self._metrics.requests.labels("", NO_POOL, NO_BACKEND, str(status), "bypass").inc()
