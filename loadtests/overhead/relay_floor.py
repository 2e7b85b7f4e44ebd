"""The floor of a relay on the gateway's server stack: what uvicorn (httptools, uvloop) and
the gateway's own upstream client cost per request with no stage between them (``--floor``
of ``python -m loadtests.overhead``), so the gateway's own work per request reads as its
figure minus this one's.

Method: an ASGI app that reads a request's body, sends it as it came (method, path, body,
content type) to the upstream named by ``RELAY_FLOOR_UPSTREAM`` over one
``gateway.upstream.ConnectionPool``, and relays the answer's status and body chunks as they
come, each through the server's ``send``; ``GET /health`` answers 200 at once. No parsing,
admission, routing, metrics or log: only a relay. Served by ``uvicorn
loadtests.overhead.relay_floor:app --loop uvloop --http httptools --lifespan off
--no-access-log``.
"""

from __future__ import annotations

import os

from starlette.types import Receive, Scope, Send

from gateway.upstream import ConnectionPool, Origin

UPSTREAM_ENV = "RELAY_FLOOR_UPSTREAM"


class RelayFloor:
    def __init__(self, upstream: str | None = None) -> None:
        self._upstream = upstream
        self._origin: Origin | None = None
        self._pool: ConnectionPool | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] == "GET" and scope["path"] == "/health":
            await _answer(send, 200, b"ok")
            return
        body = await _body(receive)
        pool, origin = self._connections()
        headers = [(k.decode(), v.decode()) for k, v in scope["headers"] if k == b"content-type"]
        response = await pool.request(origin, scope["method"], scope["path"], headers, body,
                                      connect_timeout_s=10.0)  # fmt: skip
        try:
            kind = (response.header("content-type") or "application/json").encode()
            await send({"type": "http.response.start", "status": response.status,
                        "headers": [(b"content-type", kind)]})  # fmt: skip
            async for chunk in response.chunks():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        finally:
            response.close()
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    def _connections(self) -> tuple[ConnectionPool, Origin]:
        if self._pool is None or self._origin is None:
            self._origin = Origin.from_url(self._upstream or os.environ[UPSTREAM_ENV])
            self._pool = ConnectionPool(max_idle_per_origin=1024)
        return self._pool, self._origin


async def _body(receive: Receive) -> bytes:
    parts = []
    while True:
        message = await receive()
        parts.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(parts)


async def _answer(send: Send, status: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": []})
    await send({"type": "http.response.body", "body": body})


app = RelayFloor()
