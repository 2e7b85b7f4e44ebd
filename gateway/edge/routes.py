"""Thin endpoints: read and parse the request, identify it, then ``path.run.serve`` runs its
stages; refusals render here (``edge/error_render.py``)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from gateway import __version__
from gateway.edge.admin_routes import admin_routes, read_only
from gateway.edge.dashboard_routes import dashboard_routes
from gateway.edge.error_render import render_error
from gateway.edge.openapi import openapi_document
from gateway.errors import GatewayError, NotFound
from gateway.openai.body import read_body
from gateway.openai.disconnect import DISCONNECT_HOOK, DisconnectWatch
from gateway.openai.endpoints import GATEWAY_PATHS
from gateway.openai.json_response import json_response
from gateway.openai.parse import parse_request
from gateway.openai.request import Endpoint
from gateway.openai.streaming import EventStreamResponse
from gateway.path.context import RequestContext
from gateway.path.exchange.lease import CLIENT_GONE
from gateway.path.identify import identified, identify
from gateway.path.run import serve
from gateway.runtime.host_worker import whole_metrics
from gateway.runtime.parts import Gateway
from gateway.security.tenants import visible_models

Handler = Callable[[Request], Awaitable[Response]]


def hot_routes() -> dict[str, Handler]:
    """The OpenAI endpoints (POST), by exact path: the app serves them without the router."""
    return {path: _handler(endpoint) for path, endpoint in GATEWAY_PATHS.items()}


def routes() -> list[BaseRoute]:
    """Every route (the hot ones too: HEAD or GET on them is a 405 from the router)."""
    return [
        *(
            Route(path, _handler(endpoint), methods=["POST"])
            for path, endpoint in GATEWAY_PATHS.items()
        ),
        Route("/v1/models", list_models, methods=["GET"]),
        Route("/v1/models/{model_id:path}", retrieve_model, methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        # vLLM's probe and info routes (SGLang and SageMaker probe /ping), so tools written
        # for vLLM (guidellm, benchmark scripts, load balancers) work unchanged.
        Route("/health", health, methods=["GET"]),
        Route("/ping", ping, methods=["GET"]),
        Route("/version", version, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        Route("/openapi.json", openapi, methods=["GET"]),
        *admin_routes(),
        *dashboard_routes(),
    ]


# The gateway's own operations routes (probes, scrapes, the dashboard, admin): their answers
# get a request id but are not client traffic, so gateway_requests_total leaves them out.
_OPERATIONS = frozenset(
    {"/healthz", "/readyz", "/health", "/ping", "/version", "/metrics", "/openapi.json"}
)


def is_operation(path: str) -> bool:
    if path in _OPERATIONS or path == "/dashboard":
        return True
    return path.startswith(("/dashboard/", "/admin/"))


def gateway_of(request: Request) -> Gateway:
    gateway: Gateway = request.app.state.gateway
    return gateway


def _handler(endpoint: Endpoint) -> Handler:
    # Every endpoint runs the same path; the endpoint says how its body is read and relayed.
    async def handle(request: Request) -> Response:
        return await _generate(request, endpoint)

    handle.__name__ = f"{endpoint}_endpoint"
    return handle


async def _generate(request: Request, endpoint: Endpoint) -> Response:
    gateway = gateway_of(request)
    arrival = gateway.clock()
    request_id = os.urandom(16).hex()  # 128 random bits, as a uuid4 has (less its cost)
    # The cache stage says otherwise once it has looked.
    headers = {"x-gateway-request-id": request_id, "x-gateway-cache": "bypass"}
    policy = gateway.policy
    server = policy.source.server
    try:
        caller = identify(policy, request.headers)  # 401 before any other work
        raw = await read_body(request, server.max_body_bytes, server.body_timeout_s)
    except GatewayError as exc:
        return _refuse(gateway, exc, headers, arrival, None)
    extensions = request.scope.get("extensions")
    # The server's own notice of a client leaving, where it offers one (no task per request).
    hook = None if extensions is None else extensions.get(DISCONNECT_HOOK)
    watch = DisconnectWatch(request.receive, hook)
    ctx = None
    # What is known of a request refused before its context exists (the access log's and
    # per-tenant metrics' view of a rate-limited or over-limit request).
    known: dict[str, Any] = {"tenant": caller.name if caller is not None else None}
    try:
        parsed = parse_request(endpoint, raw)
        known["model"] = parsed.model
        ctx = await identified(
            policy,
            caller,
            parsed,
            request.headers,
            gateway.rate_limits,
            request_id=request_id,
            arrival=arrival,
        )
        response = await serve(gateway, ctx, headers, watch)
    except GatewayError as exc:
        watch.stop()
        return _refuse(gateway, exc, headers, arrival, ctx, known)
    except asyncio.CancelledError:
        watch.stop()
        if watch.absorb():
            # Nobody is listening any more (counted where it ended: the lease or the queue).
            return Response(status_code=CLIENT_GONE, headers=headers)
        raise
    if not isinstance(response, EventStreamResponse):
        watch.stop()  # an event stream stops its watch when it ends
    return response


def _refuse(
    gateway: Gateway,
    exc: GatewayError,
    headers: dict[str, str],
    arrival: float,
    ctx: RequestContext | None,
    known: dict[str, Any] | None = None,
) -> Response:
    gateway.report.refused(exc, headers, arrival, ctx, known)
    return render_error(gateway.metrics, exc, headers)


async def list_models(request: Request) -> Response:
    gateway = gateway_of(request)
    caller = identify(gateway.policy, request.headers)  # a GatewayError renders as 401
    data = [_card(gateway, name) for name in visible_models(caller, gateway.policy.model_names())]
    return json_response({"object": "list", "data": data})


async def retrieve_model(request: Request) -> Response:
    gateway = gateway_of(request)
    caller = identify(gateway.policy, request.headers)
    name = request.path_params["model_id"]
    if name not in visible_models(caller, gateway.policy.model_names()):
        raise NotFound(f"The model '{name}' does not exist.", param="model", code="model_not_found")
    return json_response(_card(gateway, name))


def _card(gateway: Gateway, name: str) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": gateway.started_at, "owned_by": "gateway"}


async def healthz(request: Request) -> Response:
    return json_response({"status": "ok"})


async def readyz(request: Request) -> Response:
    gateway = gateway_of(request)
    pools = gateway.backends.pool_ready(gateway.policy)
    loading = gateway.caches.loading()  # the semantic cache's model, seconds at start
    ready = all(pools.values()) and not loading
    body = {"status": "ready" if ready else "not_ready", "pools": dict(pools)}
    if loading:
        body["cache"] = "loading"
    return json_response(body, 200 if ready else 503, None if ready else {"retry-after": "1"})


async def health(request: Request) -> Response:
    """vLLM's health probe: ready when every pool has a healthy backend (as /readyz)."""
    return await readyz(request)


async def ping(request: Request) -> Response:
    """SGLang's and SageMaker's probe: ready when every pool has a healthy backend."""
    return await readyz(request)


async def version(request: Request) -> Response:
    """The gateway's version, as vLLM's /version answers it."""
    return json_response({"version": __version__, "server": "latency-gateway"})


async def metrics(request: Request) -> Response:
    # With ``serve --workers N``: every worker's series, labelled ``worker``.
    text = await whole_metrics(read_only(request, "metrics"))
    return Response(text, media_type=CONTENT_TYPE_LATEST)


async def openapi(request: Request) -> Response:
    policy = read_only(request, "openapi").policy
    # Built once per policy: a reload brings new limits and model names.
    cached = getattr(request.app.state, "openapi", None)
    if cached is None or cached[0] is not policy:
        cached = (policy, openapi_document(request.app.routes, policy))
        request.app.state.openapi = cached
    return json_response(cached[1])
