"""Thin endpoints: parse, run the pipeline stages, respond or hand over to the proxy."""

from __future__ import annotations

import asyncio
import logging
import uuid

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from gateway.admin import admin_routes
from gateway.admit import admit
from gateway.body import read_body
from gateway.caching import cache_stage
from gateway.disconnect import DisconnectWatch
from gateway.errors import GatewayError, InternalError, MethodNotAllowed, NotFound
from gateway.lifecycle import CLIENT_GONE
from gateway.openai_api import Endpoint, parse_request
from gateway.pipeline import RequestContext
from gateway.planning import plan_pool
from gateway.request_facts import priority_of
from gateway.responses import json_response
from gateway.rewriting import rewrite_stage
from gateway.runtime import Gateway
from gateway.streaming import EventStreamResponse

log = logging.getLogger(__name__)


def routes() -> list[BaseRoute]:
    return [
        Route("/v1/chat/completions", chat_completions, methods=["POST"]),
        Route("/v1/completions", completions, methods=["POST"]),
        Route("/v1/models", list_models, methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        *admin_routes(),
    ]


def gateway_of(request: Request) -> Gateway:
    gateway: Gateway = request.app.state.gateway
    return gateway


async def chat_completions(request: Request) -> Response:
    return await _generate(request, "chat")


async def completions(request: Request) -> Response:
    return await _generate(request, "completions")


async def _generate(request: Request, endpoint: Endpoint) -> Response:
    gateway = gateway_of(request)
    arrival = gateway.clock()
    request_id = uuid.uuid4().hex
    # The cache stage says otherwise once it has looked.
    headers = {"x-gateway-request-id": request_id, "x-gateway-cache": "bypass"}
    policy = gateway.policy
    try:
        raw = await read_body(request, policy.source.server.max_body_bytes)
    except GatewayError as exc:
        return render_error(gateway, exc, headers)
    watch = DisconnectWatch(request.receive)
    try:
        ctx = RequestContext(
            request_id,
            arrival,
            parse_request(endpoint, raw),
            policy,
            request.headers,
            priority_of(request.headers),
        )
        response = await _dispatch(gateway, ctx, headers, watch)
    except GatewayError as exc:
        watch.stop()
        return render_error(gateway, exc, headers)
    except asyncio.CancelledError:
        watch.stop()
        if watch.absorb():
            return Response(status_code=CLIENT_GONE)  # nobody is listening any more
        raise
    if not isinstance(response, EventStreamResponse):
        watch.stop()  # an event stream stops its watch when it ends
    return response


async def _dispatch(
    gateway: Gateway, ctx: RequestContext, headers: dict[str, str], watch: DisconnectWatch
) -> Response:
    dispatcher, proxy = gateway.require_started()
    ctx = rewrite_stage(ctx, gateway.prefix_store, gateway.metrics, headers)
    cached = await cache_stage(gateway, ctx, headers, watch)
    if cached.response is not None:
        return cached.response  # a hit takes no admission slot and no backend
    ctx = cached.ctx
    admitted = await admit(gateway, ctx, plan_pool(ctx))
    headers["x-gateway-queue-ms"] = str(round(admitted.permit.queued_s * 1000))
    try:
        opened = await dispatcher.open(ctx, admitted.plan, admitted.permit)
    except BaseException:
        # Released already unless the request ended between attempts; release is idempotent.
        admitted.permit.release(latency_s=None, dropped=False)
        raise
    lease = opened.lease
    headers["x-gateway-pool"] = lease.plan.pool.name
    headers["x-gateway-route-reason"] = lease.plan.reason
    headers["x-gateway-backend"] = lease.backend.name
    if opened.degraded or admitted.degraded:
        headers["x-gateway-degraded"] = "1"
    return await proxy.respond(lease, opened.response, headers, watch, cached.capture)


def render_error(gateway: Gateway, exc: GatewayError, headers: dict[str, str]) -> Response:
    status = exc.http_status()
    if status < 500:
        gateway.metrics.client_errors.labels(str(status), exc.type).inc()
    return Response(
        exc.body_bytes(),
        status,
        {**headers, **exc.response_headers()},
        media_type="application/json",
    )


async def error_response(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, GatewayError)
    return render_error(gateway_of(request), exc, {})


async def internal_error(request: Request, exc: Exception) -> Response:
    """Last resort: a bug of ours. Log it whole; tell the client only that it happened."""
    log.exception("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    error = InternalError("The gateway failed to handle this request.", code="internal_error")
    return Response(error.body_bytes(), 500, media_type="application/json")


async def not_found(request: Request, exc: Exception) -> Response:
    status = exc.status_code if isinstance(exc, HTTPException) else 404
    error: GatewayError
    if status == 405:
        error = MethodNotAllowed(f"Method {request.method} is not allowed on {request.url.path}.")
    else:
        error = NotFound(f"Unknown path {request.url.path}.", code="unknown_url")
    return render_error(gateway_of(request), error, {})


async def list_models(request: Request) -> Response:
    gateway = gateway_of(request)
    data = [
        {"id": name, "object": "model", "created": gateway.started_at, "owned_by": "gateway"}
        for name in gateway.policy.model_names()
    ]
    return json_response({"object": "list", "data": data})


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


async def metrics(request: Request) -> Response:
    registry = gateway_of(request).metrics.registry
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)
