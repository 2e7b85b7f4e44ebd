"""Thin endpoints: parse, run the pipeline stages, respond or hand over to the proxy."""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import replace
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from gateway.access_log import ms
from gateway.edge.admin import admin_routes, read_only
from gateway.edge.body import read_body
from gateway.edge.dashboard import dashboard_routes
from gateway.edge.disconnect import DisconnectWatch
from gateway.edge.openai_api import Endpoint, parse_request
from gateway.edge.openapi import openapi_document
from gateway.edge.responses import json_response
from gateway.edge.streaming import EventStreamResponse
from gateway.errors import GatewayError, InternalError, MethodNotAllowed, NotFound
from gateway.path.admit import admit
from gateway.path.cache import cache_stage
from gateway.path.compress import compress_stage
from gateway.path.context import RequestContext
from gateway.path.identify import identify, priority_for, screen
from gateway.path.lease import CLIENT_GONE
from gateway.path.plan import plan_pool
from gateway.path.report import request_fields
from gateway.path.rewrite import rewrite_stage
from gateway.runtime import Gateway
from gateway.security.tenants import visible_models

log = logging.getLogger(__name__)


def routes() -> list[BaseRoute]:
    return [
        Route("/v1/chat/completions", chat_completions, methods=["POST"]),
        Route("/v1/completions", completions, methods=["POST"]),
        Route("/v1/models", list_models, methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        Route("/openapi.json", openapi, methods=["GET"]),
        *admin_routes(),
        *dashboard_routes(),
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
    server = policy.source.server
    try:
        caller = identify(policy, request.headers)  # 401 before any other work
        raw = await read_body(request, server.max_body_bytes, server.body_timeout_s)
    except GatewayError as exc:
        return _refuse(gateway, exc, headers, arrival, None)
    watch = DisconnectWatch(request.receive)
    ctx = None
    # What is known of a request refused before its context exists (the access log's and
    # per-tenant metrics' view of a rate-limited or over-limit request).
    known: dict[str, Any] = {"tenant": caller.name if caller is not None else None}
    try:
        parsed = parse_request(endpoint, raw)
        known["model"] = parsed.model
        parsed = await screen(policy, caller, parsed, gateway.rate_limits)
        ctx = RequestContext(
            request_id,
            arrival,
            parsed,
            policy,
            request.headers,
            priority_for(caller, request.headers),
            tenant=caller.name if caller is not None else None,
        )
        response = await _dispatch(gateway, ctx, headers, watch)
    except GatewayError as exc:
        watch.stop()
        return _refuse(gateway, exc, headers, arrival, ctx, known)
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
    marks, clock = ctx.marks, gateway.clock
    ctx = rewrite_stage(ctx, gateway.prefix_store, gateway.metrics, headers)
    marks.mark("rewrite", clock())
    cached = await cache_stage(gateway, ctx, headers, watch)
    ctx = replace(cached.ctx, cache=headers.get("x-gateway-cache"))
    marks.mark("cache", clock())
    if cached.response is not None:
        _report_hit(gateway, ctx, headers)
        return cached.response  # a hit takes no admission slot and no backend
    plan = plan_pool(ctx)
    marks.mark("plan", clock())
    ctx, plan = compress_stage(ctx, plan, gateway.summaries, gateway.metrics, headers)
    marks.mark("compress", clock())
    admitted = await admit(gateway, ctx, plan)
    marks.mark("admit", clock())
    headers["x-gateway-queue-ms"] = str(round(admitted.permit.queued_s * 1000))
    try:
        opened = await dispatcher.open(ctx, admitted.plan, admitted.permit)
        marks.mark("upstream_open", clock())
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


def _report_hit(gateway: Gateway, ctx: RequestContext, headers: dict[str, str]) -> None:
    now = gateway.clock()
    fields = {**request_fields(ctx, now), "status": 200, "ttft_ms": ms(now - ctx.arrival)}
    gateway.report.finished(fields, ctx.arrival, now, [*ctx.marks.ends, ("replay", now)])


def _refuse(
    gateway: Gateway,
    exc: GatewayError,
    headers: dict[str, str],
    arrival: float,
    ctx: RequestContext | None,
    known: dict[str, Any] | None = None,
) -> Response:
    """The error response, and its access-log line (a served request logs in its lease);
    ``known``: the fields of a request refused before its context existed."""
    now = gateway.clock()
    fields = {
        **(request_fields(ctx, now) if ctx is not None else known or {}),
        "id": headers["x-gateway-request-id"],
        "cache": headers.get("x-gateway-cache"),  # the stage's result, set on the way
        "duration_ms": ms(now - arrival),
        "pool": headers.get("x-gateway-pool") or exc.headers.get("x-gateway-pool"),
        "backend": exc.headers.get("x-gateway-backend"),
        "status": exc.http_status(),
        "error": exc.code or exc.type,
    }
    ends = [*(ctx.marks.ends if ctx is not None else ()), ("refused", now)]
    gateway.report.finished(fields, arrival, now, ends)
    return render_error(gateway, exc, headers)


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
    caller = identify(gateway.policy, request.headers)  # a GatewayError renders as 401
    data = [
        {"id": name, "object": "model", "created": gateway.started_at, "owned_by": "gateway"}
        for name in visible_models(caller, gateway.policy.model_names())
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
    registry = read_only(request, "metrics").metrics.registry
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)


async def openapi(request: Request) -> Response:
    read_only(request, "openapi")
    return json_response(openapi_document())
