"""Starlette app of one simulated replica (vLLM or TGI flavour) and its uvicorn server."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Generator

import uvicorn
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from loadtests.sim.openai_routes import OpenAIHandlers, openai_routes
from loadtests.sim.replica import Replica
from loadtests.sim.tgi_routes import tgi_routes
from loadtests.sim.vllm_extras import vllm_extra_routes


def build_app(replica: Replica) -> Starlette:
    """Routes of the replica's engine flavour; the lifespan runs the engine driver."""

    async def health(request: Request) -> Response:
        return Response(status_code=200)

    async def metrics(request: Request) -> Response:
        return Response(generate_latest(replica.registry), media_type=CONTENT_TYPE_LATEST)

    handlers = OpenAIHandlers(replica)
    routes = [
        Route("/health", health, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        *openai_routes(handlers),
    ]
    if replica.kind == "tgi":
        routes.extend(tgi_routes(replica))
    else:
        routes.extend(vllm_extra_routes(handlers))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        task = asyncio.create_task(replica.driver.run(), name=f"engine-{replica.name}")
        try:
            yield
        finally:
            task.cancel()
            await asyncio.wait({task})

    return Starlette(routes=routes, lifespan=lifespan)


class ReplicaServer(uvicorn.Server):
    """A uvicorn server that leaves signal handling to its owner (many share one loop)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


def bind(host: str, port: int) -> socket.socket:
    """A listening socket; port 0 picks a free port (read it back with ``getsockname``)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.setblocking(False)
    return sock


def make_server(replica: Replica) -> ReplicaServer:
    config = uvicorn.Config(
        build_app(replica),
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=1,
    )
    return ReplicaServer(config)


async def wait_started(servers: list[ReplicaServer], tasks: list[asyncio.Task[None]]) -> None:
    """Return once every server accepts connections; re-raise if one dies during startup."""
    # uvicorn exposes readiness only as a flag; poll it briefly (startup only, not per request).
    while not all(s.started for s in servers):
        for task in tasks:
            if task.done():
                await task
                raise RuntimeError("a replica server exited during startup")
        await asyncio.sleep(0.005)
