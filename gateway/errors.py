"""One error hierarchy, and the single map from it to OpenAI-shaped JSON and an HTTP status.

Every failure a client can see is a ``GatewayError``; routes never build error bodies by hand.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import orjson


@dataclass(eq=False)
class GatewayError(Exception):
    """A failure with an OpenAI error ``type``, HTTP status and optional ``param``/``code``."""

    message: str
    param: str | None = None
    code: str | None = None
    retry_after_s: float | None = None
    headers: dict[str, str] = field(default_factory=dict)
    # True when another backend may well succeed (nothing reached the client yet).
    retryable: bool = False

    status: ClassVar[int] = 500
    type: ClassVar[str] = "server_error"

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def http_status(self) -> int:
        return self.status

    def body(self) -> dict[str, Any]:
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.code,
            }
        }

    def body_bytes(self) -> bytes:
        return orjson.dumps(self.body())

    def response_headers(self) -> dict[str, str]:
        headers = dict(self.headers)
        if self.retry_after_s is not None:
            # Retry-After takes whole seconds; rounding up never invites an early retry.
            headers["retry-after"] = str(max(1, int(-(-self.retry_after_s // 1))))
        return headers


class InvalidRequest(GatewayError):
    status = 400
    type = "invalid_request_error"


class Unauthorized(GatewayError):
    status = 401
    type = "authentication_error"


class Forbidden(GatewayError):
    status = 403
    type = "permission_error"


class NotFound(GatewayError):
    status = 404
    type = "invalid_request_error"


class MethodNotAllowed(GatewayError):
    status = 405
    type = "invalid_request_error"


class RequestTimeout(GatewayError):
    status = 408
    type = "invalid_request_error"


class PolicyRejected(GatewayError):
    """``/admin/reload`` refused the policy file (400), or there is no file to reload (409)."""

    type = "invalid_policy"

    def __init__(self, message: str, *, digest: str, from_file: bool) -> None:
        super().__init__(message, code="policy_rejected")
        self.digest = digest
        self._status = 400 if from_file else 409

    def http_status(self) -> int:
        return self._status

    def body(self) -> dict[str, Any]:
        return {**super().body(), "digest": self.digest}


class PayloadTooLarge(GatewayError):
    status = 413
    type = "invalid_request_error"


class UnsupportedMediaType(GatewayError):
    status = 415
    type = "invalid_request_error"


class RateLimited(GatewayError):
    status = 429
    type = "rate_limit_error"


class BadGateway(GatewayError):
    status = 502
    type = "upstream_error"


class ServiceUnavailable(GatewayError):
    status = 503
    type = "service_unavailable"


class GatewayTimeout(GatewayError):
    status = 504
    type = "timeout"


class UpstreamClientError(GatewayError):
    """A 4xx the backend returned: the client's fault, relayed with the backend's status."""

    type = "invalid_request_error"

    def __init__(self, status: int, message: str, *, param: str | None, code: str | None) -> None:
        super().__init__(message, param=param, code=code)
        self._status = status

    def http_status(self) -> int:
        return self._status


class InternalError(GatewayError):
    status = 500
    type = "server_error"
