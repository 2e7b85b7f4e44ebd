"""Error rendering: every ``GatewayError`` becomes its OpenAI-shaped JSON body, its status and
its headers here, and only here; unknown paths, wrong methods and our own bugs too."""

from __future__ import annotations

import logging
import uuid

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from gateway.errors import GatewayError, InternalError, MethodNotAllowed, NotFound
from gateway.metrics import GatewayMetrics
from gateway.runtime.parts import Gateway

log = logging.getLogger(__name__)


def render_error(metrics: GatewayMetrics, exc: GatewayError, headers: dict[str, str]) -> Response:
    status = exc.http_status()
    if status < 500:
        metrics.client_errors.labels(str(status), exc.type).inc()
    return Response(
        exc.body_bytes(),
        status,
        {**headers, **exc.response_headers()},
        media_type="application/json",
    )


def _metrics(request: Request) -> GatewayMetrics:
    gateway: Gateway = request.app.state.gateway
    return gateway.metrics


async def error_response(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, GatewayError)
    return render_error(_metrics(request), exc, {})


async def internal_error(request: Request, exc: Exception) -> Response:
    """Last resort: a bug of ours. Log it whole; tell the client only that it happened."""
    log.exception("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    error = InternalError("The gateway failed to handle this request.", code="internal_error")
    headers = {"x-gateway-request-id": uuid.uuid4().hex}  # outside the id middleware
    return Response(error.body_bytes(), 500, headers, media_type="application/json")


async def not_found(request: Request, exc: Exception) -> Response:
    status = exc.status_code if isinstance(exc, HTTPException) else 404
    error: GatewayError
    if status == 405:
        # RFC 9110: a 405 says which methods the resource takes (Starlette's ``Allow``).
        given = (exc.headers or {}).get("Allow", "") if isinstance(exc, HTTPException) else ""
        allow = ", ".join(sorted(m.strip() for m in given.split(",") if m.strip()))
        error = MethodNotAllowed(
            f"Method {request.method} is not allowed on {request.url.path}; allowed: {allow}.",
            headers={"allow": allow},
        )
    else:
        error = NotFound(f"Unknown path {request.url.path}.", code="unknown_url")
    return render_error(_metrics(request), error, {})
