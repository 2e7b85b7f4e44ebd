"""Build the Starlette app; its lifespan owns the HTTP client and the background tasks."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from gateway import cluster
from gateway.backends.discovery import Discovery, Resolver
from gateway.backends.health import HealthChecker
from gateway.backends.load_watch import LoadWatcher
from gateway.backends.served_context import ServedContexts
from gateway.edge.error_render import error_response, internal_error, not_found, render_error
from gateway.edge.every_answer import EveryAnswer, count_unnamed
from gateway.edge.routes import Handler, hot_routes, is_operation, routes
from gateway.errors import GatewayError
from gateway.host.board import Board
from gateway.metrics import GatewayMetrics
from gateway.path.relay import Proxy
from gateway.policy.compile import CompiledPolicy
from gateway.policy.reload import PolicyHolder
from gateway.runtime.host_worker import host_worker, whole_snapshot
from gateway.runtime.parts import Gateway
from gateway.upstream import ConnectionPool

log = logging.getLogger(__name__)


def build_app(
    policy: CompiledPolicy,
    *,
    policy_path: str | Path | None = None,
    clock: Callable[[], float] = time.perf_counter,
    registry: CollectorRegistry | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    resolver: Resolver | None = None,
    board: Board | None = None,
) -> Starlette:
    """``resolver``: how DNS names of discovering backends are resolved (default: the
    system's); ``board``: the host board of ``serve --workers N`` (this process is one
    worker)."""
    metrics = GatewayMetrics(registry if registry is not None else CollectorRegistry())
    path = Path(policy_path) if policy_path is not None else None
    gateway = Gateway.create(policy, path=path, metrics=metrics, clock=clock, board=board)
    if resolver is not None:
        gateway.discovery = Discovery(resolver)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        upstream = ConnectionPool(
            max_idle_per_origin=policy.source.server.max_keepalive_connections
        )
        gateway.start(Proxy(upstream, clock), upstream, sleep)
        await gateway.caches.start()
        try:
            async with (
                _background(gateway, upstream),
                cluster.lifespan(gateway),
                host_worker(gateway),
            ):
                yield
        finally:
            await gateway.stop()
            await gateway.caches.close()
            upstream.close()
            # Flushes pending spans: a blocking call, kept off the event loop.
            await asyncio.to_thread(gateway.report.close)
            await gateway.rate_limits.aclose()

    app = GatewayApp(
        hot=hot_routes(),
        routes=routes(),
        lifespan=lifespan,
        # Every answer has x-gateway-request-id and is in gateway_requests_total.
        middleware=[Middleware(EveryAnswer, metrics=metrics, operations=is_operation)],
        exception_handlers={
            404: not_found,
            405: not_found,
            GatewayError: error_response,
            Exception: internal_error,
        },
    )
    app.state.gateway = gateway
    return app


class GatewayApp(Starlette):
    """The Starlette app, with the OpenAI endpoints (``edge/routes.hot_routes``: POST to an
    exact path) served straight from the ASGI call: no router scan, no middleware wrapping
    every ``send`` of a stream. What the middlewares would do for them is done here: their
    answers carry a request id and are counted by the request path itself (``EveryAnswer``
    leaves such answers alone); an escaped refusal is rendered as itself, and a bug as a
    logged 500, both with an id and counted as ``EveryAnswer`` counts them, the bug raised
    on for the server to log too. Everything else goes through Starlette."""

    def __init__(self, *, hot: Mapping[str, Handler], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._hot = dict(hot)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            handler = self._hot.get(scope["path"])
            if handler is not None:
                scope["app"] = self
                await self._serve(handler, Request(scope, receive, send), send)
                return
        await super().__call__(scope, receive, send)

    async def _serve(self, handler: Handler, request: Request, send: Send) -> None:
        metrics: GatewayMetrics = self.state.gateway.metrics
        try:
            response = await handler(request)
        except GatewayError as exc:
            response = render_error(metrics, exc, {"x-gateway-request-id": os.urandom(16).hex()})
            count_unnamed(metrics, exc.http_status())
        except Exception as exc:
            count_unnamed(metrics, 500)
            await (await internal_error(request, exc))(request.scope, request.receive, send)
            raise
        await response(request.scope, request.receive, send)


@contextlib.asynccontextmanager
async def _background(gateway: Gateway, upstream: ConnectionPool) -> AsyncIterator[None]:
    # Probes and scrapes share the request path's pool: the same TLS, proxy and base path.
    checker = HealthChecker(
        upstream,
        lambda: gateway.policy,
        gateway.pool_states,
        gateway.on_health_change,
    )
    # Replicas behind DNS names first: the first probes and requests find them.
    found = await gateway.discovery.refresh(gateway.policy, all_due=True)
    if found is not None:
        await gateway.holder.rediscover(found)
    await checker.probe_all()
    # Each backend's served context length (vLLM's max_model_len), before serving.
    served = ServedContexts(
        upstream, lambda: gateway.policy, gateway.pool_states, gateway.learned_context
    )
    await served.ask_new()
    loads = LoadWatcher(upstream, lambda: gateway.policy, gateway.pool_states, gateway.on_load_read)
    discover = gateway.discovery.run(
        lambda: gateway.policy, gateway.holder.rediscover, checker.probe_all
    )
    tasks = [
        asyncio.create_task(discover, name="discovery"),
        asyncio.create_task(checker.run(), name="health-checker"),
        asyncio.create_task(served.run(), name="served-context"),
        asyncio.create_task(loads.run(), name="load-watcher"),
        asyncio.create_task(gateway.holder.watch(), name="policy-watcher"),
        asyncio.create_task(
            gateway.history.run(partial(whole_snapshot, gateway)),
            name="dashboard-history",
        ),
    ]
    hup = _install_sighup(gateway.holder)
    try:
        yield
    finally:
        if hup is not None:
            hup()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _install_sighup(holder: PolicyHolder) -> Callable[[], None] | None:
    # Signal handlers can only be set from the main thread (tests run servers in threads).
    if threading.current_thread() is not threading.main_thread() or holder.path is None:
        return None
    loop = asyncio.get_running_loop()
    pending: set[asyncio.Task[object]] = set()

    def on_hup() -> None:
        task: asyncio.Task[object] = loop.create_task(holder.reload())
        pending.add(task)
        task.add_done_callback(pending.discard)

    loop.add_signal_handler(signal.SIGHUP, on_hup)

    def remove() -> None:
        loop.remove_signal_handler(signal.SIGHUP)

    return remove
