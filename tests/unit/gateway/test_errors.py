"""The error hierarchy's single map to OpenAI error JSON, HTTP status and headers."""

from __future__ import annotations

import orjson
import pytest

from gateway.errors import (
    BadGateway,
    Forbidden,
    GatewayError,
    GatewayTimeout,
    InternalError,
    InvalidRequest,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    ServiceUnavailable,
    Unauthorized,
    UnsupportedMediaType,
    UpstreamClientError,
)

# error class -> (HTTP status, OpenAI error type)
CLASSES: list[tuple[type[GatewayError], int, str]] = [
    (GatewayError, 500, "server_error"),
    (InvalidRequest, 400, "invalid_request_error"),
    (Unauthorized, 401, "authentication_error"),
    (Forbidden, 403, "permission_error"),
    (NotFound, 404, "invalid_request_error"),
    (MethodNotAllowed, 405, "invalid_request_error"),
    (PayloadTooLarge, 413, "invalid_request_error"),
    (UnsupportedMediaType, 415, "invalid_request_error"),
    (RateLimited, 429, "rate_limit_error"),
    (InternalError, 500, "server_error"),
    (BadGateway, 502, "upstream_error"),
    (ServiceUnavailable, 503, "service_unavailable"),
    (GatewayTimeout, 504, "timeout"),
]


@pytest.mark.parametrize(
    ("cls", "status", "kind"), CLASSES, ids=[c.__name__ for c, _, _ in CLASSES]
)
def test_status_and_body_shape(cls: type[GatewayError], status: int, kind: str) -> None:
    err = cls("went wrong", param="messages[0].role", code="bad_role")

    assert err.http_status() == status
    expected = {
        "error": {
            "message": "went wrong",
            "type": kind,
            "param": "messages[0].role",
            "code": "bad_role",
        }
    }
    assert err.body() == expected
    assert orjson.loads(err.body_bytes()) == expected
    assert str(err) == "went wrong"


def test_body_has_null_param_and_code_by_default() -> None:
    assert InvalidRequest("x").body() == {
        "error": {"message": "x", "type": "invalid_request_error", "param": None, "code": None}
    }


@pytest.mark.parametrize(
    ("retry_after_s", "header"),
    [
        (0.2, "1"),
        (1.0, "1"),
        (1.5, "2"),
        (2.0001, "3"),
        (3, "3"),
        (3.0, "3"),
        (59.9, "60"),
        (0, "1"),
        (0.0, "1"),
    ],
)
def test_retry_after_rounds_up_to_whole_seconds(retry_after_s: float, header: str) -> None:
    err = ServiceUnavailable("busy", retry_after_s=retry_after_s)
    assert err.response_headers() == {"retry-after": header}


def test_no_retry_after_without_a_delay() -> None:
    assert RateLimited("slow down").response_headers() == {}


def test_response_headers_merge_without_mutating_the_error() -> None:
    err = RateLimited("slow down", retry_after_s=2.5, headers={"x-gateway-pool": "small"})

    assert err.response_headers() == {"x-gateway-pool": "small", "retry-after": "3"}
    assert err.headers == {"x-gateway-pool": "small"}


def test_errors_do_not_share_header_dicts() -> None:
    first, second = BadGateway("a"), BadGateway("b")
    first.headers["x"] = "1"
    assert second.headers == {}


@pytest.mark.parametrize("status", [400, 413, 422, 409])
def test_upstream_client_error_keeps_the_given_status(status: int) -> None:
    err = UpstreamClientError(status, "too long", param="messages", code="context_length")

    assert err.http_status() == status
    assert err.body() == {
        "error": {
            "message": "too long",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length",
        }
    }
    assert err.response_headers() == {}
