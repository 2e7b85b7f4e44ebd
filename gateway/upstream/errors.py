"""Map what a backend answered (or failed to) onto the gateway's errors.

A backend's 400/413/422 are the client's fault and keep their meaning; its 401/403/404 mean
the gateway is misconfigured (credentials, served model name) and become 502; 429 and 503
keep their status and Retry-After; any other status is a 502. Refused connections and a
backend's 429, 502 and 503 are retryable on another backend; nothing else is (a 500 or a
timeout may be the request's own fault, and retrying it would double the load).
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway.errors import (
    BadGateway,
    GatewayError,
    GatewayTimeout,
    RateLimited,
    ServiceUnavailable,
    UpstreamClientError,
)
from gateway.upstream import ConnectFailed

_MAX_ERROR_TEXT = 500


def from_status(
    status: int, body: bytes, retry_after_header: str | None, backend: str
) -> GatewayError:
    message, param, code = _describe(body)
    retry_after = _retry_after(retry_after_header)
    if status in (400, 413, 422):
        return UpstreamClientError(
            400 if status == 422 else status, message, param=param, code=code
        )
    if status == 429:
        return RateLimited(
            f"Backend '{backend}' is rate limiting: {message}",
            retry_after_s=retry_after or 1,
            retryable=True,
        )
    if status == 503:
        return ServiceUnavailable(
            f"Backend '{backend}' is unavailable: {message}",
            retry_after_s=retry_after or 1,
            retryable=True,
        )
    return BadGateway(
        f"Backend '{backend}' answered HTTP {status}: {message}",
        code="upstream_status",
        retryable=status == 502,
    )


def from_exception(exc: BaseException, backend: str) -> GatewayError:
    if isinstance(exc, ConnectFailed):
        return BadGateway(
            f"Could not connect to backend '{backend}': {exc}.",
            code="upstream_connect",
            retryable=True,
        )
    if isinstance(exc, TimeoutError):
        return GatewayTimeout(f"Backend '{backend}' timed out.", code="upstream_timeout")
    return BadGateway(f"Backend '{backend}' broke the exchange: {exc}.", code="upstream_protocol")


def invalid_response(backend: str, detail: str) -> BadGateway:
    return BadGateway(
        f"Backend '{backend}' sent an invalid response: {detail}", code="upstream_invalid"
    )


def _describe(body: bytes) -> tuple[str, str | None, str | None]:
    try:
        data: Any = orjson.loads(body)
    except orjson.JSONDecodeError:
        text = body[:_MAX_ERROR_TEXT].decode("utf-8", "replace").strip()
        return (text or "no details"), None, None
    # OpenAI nests under "error"; vLLM's older servers put the fields at the top level.
    err = data.get("error", data) if isinstance(data, dict) else {}
    if isinstance(err, str):
        return err[:_MAX_ERROR_TEXT], None, None
    if not isinstance(err, dict):
        return "no details", None, None
    message = str(err.get("message") or err.get("detail") or "no details")[:_MAX_ERROR_TEXT]
    param = err.get("param")
    code = err.get("code")
    return message, param if isinstance(param, str) else None, str(code) if code else None


def _retry_after(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None
