"""Map what a backend answered (or failed to) onto the gateway's errors.

A backend's 400/413/422 are the client's fault and keep their meaning; its 401/403/404 mean
the gateway is misconfigured (credentials, served model name) and become 502; 429 and 503
keep their status and Retry-After; any other status is a 502.

Retryable on another replica (the dispatcher decides, within the retry budget, and only
before the client has seen a byte): a refused connection; a backend's 429, 500, 502, 503 and
504 (a broken or overloaded replica; another one may well answer, and the retry budget keeps
retries from amplifying an overload); and a connection the backend reset or closed after the
request was sent but before its response head (``before_head``: nothing was answered, so
nothing is repeated for the client). Not retryable: the client's faults (4xx), and the
gateway's own timeouts (a request that is slow on one replica is likely slow on the next, and
retrying would double the load).

Nothing a backend says reaches the client unfiltered: every error body is rebuilt from
known-safe fields. The status, the backend's name and the gateway's own words always; the
backend's message only for the client's faults (400/413/422, where the client needs it to
fix its request), after ``Redactor.text`` (secret values, their tails, key-shaped tokens)
with control characters flattened; its ``param`` and ``code`` only when they are short
identifiers that redaction leaves alone. An error event inside a stream (``from_event``)
goes through the same rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
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
from gateway.security.redact import Redactor
from gateway.upstream import ConnectFailed, ProtocolFailed

_MAX_ERROR_TEXT = 500
_IDENTIFIER = re.compile(r"[A-Za-z0-9_.\[\]-]{1,64}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")
# A backend's statuses (besides 429 and 503) that say "this replica failed", not "this request".
_ANOTHER_REPLICA = frozenset({500, 502, 504})
# What the gateway says instead of the backend, by status.
_OWN_WORDS = {
    401: "refused the gateway's credentials; check the backend's api_key_env",
    403: "refused the gateway's credentials; check the backend's api_key_env",
    404: "does not know the request's route or served model; check the backend's model",
}


@dataclass(frozen=True, slots=True)
class _Said:
    """The safe part of what a backend said about an error."""

    message: str
    param: str | None
    code: str | None


def from_status(
    status: int, body: bytes, retry_after_header: str | None, backend: str, redactor: Redactor
) -> GatewayError:
    said = _describe(body, redactor)
    retry_after = _retry_after(retry_after_header)
    if status in (400, 413, 422):
        return UpstreamClientError(
            400 if status == 422 else status, said.message, param=said.param, code=said.code
        )
    if status == 429:
        return RateLimited(
            f"Backend '{backend}' is rate limiting.",
            retry_after_s=retry_after or 1,
            retryable=True,
        )
    if status == 503:
        return ServiceUnavailable(
            f"Backend '{backend}' is unavailable.",
            retry_after_s=retry_after or 1,
            retryable=True,
        )
    words = _OWN_WORDS.get(status)
    return BadGateway(
        f"Backend '{backend}' answered HTTP {status}" + (f": it {words}." if words else "."),
        code="upstream_status",
        retryable=status in _ANOTHER_REPLICA,
    )


def is_error_event(event: dict[str, Any]) -> bool:
    """Whether a stream event is a backend's error report rather than a chunk (the Responses
    API's is a typed ``error`` event)."""
    if event.get("object") == "error" or event.get("type") == "error":
        return True
    return event.get("error") is not None and "choices" not in event


def from_event(event: dict[str, Any], backend: str, redactor: Redactor) -> GatewayError:
    """The gateway's error for an error event inside a stream (vLLM: ``{"error": {...,
    "code": 400}}``, TGI: ``{"error": "...", "error_type": ...}``, Responses API: ``{"type":
    "error", "code": ..., "message": ...}``)."""
    error = event.get("error", event)
    code = error.get("code") if isinstance(error, dict) else None
    status = code if isinstance(code, int) and 400 <= code <= 599 else 500
    return from_status(status, orjson.dumps(event), None, backend, redactor)


def from_exception(exc: BaseException, backend: str, *, before_head: bool = False) -> GatewayError:
    """``before_head``: the failure came before the backend's response head (the request
    may have been sent, but no answer began), so another replica may take it."""
    if isinstance(exc, ConnectFailed):
        return BadGateway(
            f"Could not connect to backend '{backend}': {exc}.",
            code="upstream_connect",
            retryable=True,
        )
    if isinstance(exc, TimeoutError):
        return GatewayTimeout(f"Backend '{backend}' timed out.", code="upstream_timeout")
    return BadGateway(
        f"Backend '{backend}' broke the exchange: {exc}.",
        code="upstream_protocol",
        retryable=before_head and isinstance(exc, ProtocolFailed),
    )


def invalid_response(backend: str, detail: str) -> BadGateway:
    return BadGateway(
        f"Backend '{backend}' sent an invalid response: {detail}", code="upstream_invalid"
    )


def _describe(body: bytes, redactor: Redactor) -> _Said:
    try:
        data: Any = orjson.loads(body)
    except orjson.JSONDecodeError:
        return _Said(_message(body.decode("utf-8", "replace"), redactor), None, None)
    # OpenAI nests under "error"; vLLM's older servers put the fields at the top level.
    err = data.get("error", data) if isinstance(data, dict) else {}
    if isinstance(err, str):
        return _Said(_message(err, redactor), None, None)
    if not isinstance(err, dict):
        return _Said("no details", None, None)
    message = _message(str(err.get("message") or err.get("detail") or ""), redactor)
    code = err.get("code")
    return _Said(
        message,
        _identifier(err.get("param"), redactor),
        _identifier(str(code) if isinstance(code, str | int) and code else None, redactor),
    )


def _message(text: str, redactor: Redactor) -> str:
    clean = _CONTROL.sub(" ", redactor.clipped(text.strip(), _MAX_ERROR_TEXT)).strip()
    return clean or "no details"


def _identifier(value: Any, redactor: Redactor) -> str | None:
    """``value`` when it is a short identifier that holds nothing to redact, else None."""
    if not isinstance(value, str) or not _IDENTIFIER.fullmatch(value):
        return None
    return value if redactor.text(value) == value else None


def _retry_after(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None
