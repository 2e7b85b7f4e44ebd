"""Build the Starlette app; its lifespan owns the HTTP client and the background tasks."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

from prometheus_client import CollectorRegistry
from starlette.applications import Starlette
from starlette.middleware import Middleware

from gateway import cluster
from gateway.backends.health import HealthChecker
from gateway.backends.load_watch import LoadWatcher
from gateway.backends.served_context import ServedContexts
from gateway.dashboard.snapshot import snapshot
from gateway.edge.error_render import error_response, internal_error, not_found
from gateway.edge.every_answer import EveryAnswer
from gateway.edge.routes import is_operation, routes
from gateway.errors import GatewayError
from gateway.metrics import GatewayMetrics
from gateway.path.relay import Proxy
from gateway.policy.compile import CompiledPolicy
from gateway.policy.reload import PolicyHolder
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
) -> Starlette:
    metrics = GatewayMetrics(registry if registry is not None else CollectorRegistry())
    path = Path(policy_path) if policy_path is not None else None
    gateway = Gateway.create(policy, path=path, metrics=metrics, clock=clock)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        upstream = ConnectionPool(
            max_idle_per_origin=policy.source.server.max_keepalive_connections
        )
        gateway.start(Proxy(upstream, clock), upstream, sleep)
        await gateway.caches.start()
        try:
            async with _background(gateway, upstream), cluster.lifespan(gateway):
                yield
        finally:
            await gateway.stop()
            await gateway.caches.close()
            upstream.close()
            # Flushes pending spans: a blocking call, kept off the event loop.
            await asyncio.to_thread(gateway.report.close)
            await gateway.rate_limits.aclose()

    app = Starlette(
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


@contextlib.asynccontextmanager
async def _background(gateway: Gateway, upstream: ConnectionPool) -> AsyncIterator[None]:
    # Probes and scrapes share the request path's pool: the same TLS, proxy and base path.
    checker = HealthChecker(
        upstream,
        lambda: gateway.policy,
        gateway.pool_states,
        gateway.on_health_change,
    )
    await checker.probe_all()
    # Each backend's served context length (vLLM's max_model_len), before serving.
    served = ServedContexts(
        upstream, lambda: gateway.policy, gateway.pool_states, gateway.learned_context
    )
    await served.ask_new()
    loads = LoadWatcher(upstream, lambda: gateway.policy, gateway.pool_states, gateway.on_load_read)
    tasks = [
        asyncio.create_task(checker.run(), name="health-checker"),
        asyncio.create_task(served.run(), name="served-context"),
        asyncio.create_task(loads.run(), name="load-watcher"),
        asyncio.create_task(gateway.holder.watch(), name="policy-watcher"),
        asyncio.create_task(
            gateway.history.run(lambda: snapshot(gateway.metrics, gateway.clock())),
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
