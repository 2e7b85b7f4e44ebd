"""Mapping a backend's answers and failures onto the gateway's errors."""

from __future__ import annotations

from dataclasses import dataclass

import orjson
import pytest

from gateway.errors import (
    BadGateway,
    GatewayError,
    GatewayTimeout,
    RateLimited,
    ServiceUnavailable,
    UpstreamClientError,
)
from gateway.upstream import ConnectFailed, ProtocolFailed
from gateway.upstream.errors import from_exception, from_status, invalid_response

OPENAI_BODY = orjson.dumps(
    {
        "error": {
            "message": "This model's maximum context length is 4096 tokens.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }
)
VLLM_BODY = orjson.dumps(
    {
        "object": "error",
        "message": "max_tokens must be at least 1",
        "type": "BadRequestError",
        "param": None,
        "code": 400,
    }
)


@dataclass(frozen=True)
class Case:
    status: int
    body: bytes
    cls: type[GatewayError]
    http_status: int
    message: str  # a fragment of the message
    param: str | None = None
    code: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    retry_after: str | None = None


CASES: dict[str, Case] = {
    "400 OpenAI shape": Case(
        400,
        OPENAI_BODY,
        UpstreamClientError,
        400,
        "This model's maximum context length is 4096 tokens.",
        param="messages",
        code="context_length_exceeded",
    ),
    "400 vLLM top-level shape": Case(
        400, VLLM_BODY, UpstreamClientError, 400, "max_tokens must be at least 1", code="400"
    ),
    "400 plain text": Case(400, b"  bad things  \n", UpstreamClientError, 400, "bad things"),
    "400 empty body": Case(400, b"", UpstreamClientError, 400, "no details"),
    "400 error as a string": Case(
        400, b'{"error": "prompt too long"}', UpstreamClientError, 400, "prompt too long"
    ),
    "400 FastAPI detail": Case(
        400, b'{"detail": "bad field"}', UpstreamClientError, 400, "bad field"
    ),
    "400 JSON array": Case(400, b"[1, 2]", UpstreamClientError, 400, "no details"),
    "413 keeps its status": Case(
        413, OPENAI_BODY, UpstreamClientError, 413, "maximum context", param="messages",
        code="context_length_exceeded",
    ),
    "422 becomes 400": Case(
        422, VLLM_BODY, UpstreamClientError, 400, "max_tokens must be at least 1", code="400"
    ),
    "401 is the gateway's misconfiguration": Case(
        401, b'{"error": {"message": "bad key"}}', BadGateway, 502, "answered HTTP 401: bad key",
        code="upstream_status",
    ),
    "403": Case(403, b"forbidden", BadGateway, 502, "HTTP 403", code="upstream_status"),
    "404 unknown model": Case(
        404, OPENAI_BODY, BadGateway, 502, "Backend 'b1' answered HTTP 404", code="upstream_status"
    ),
    "500": Case(500, b"Internal Server Error", BadGateway, 502, "HTTP 500: Internal Server Error",
                code="upstream_status"),
    "429 with Retry-After": Case(
        429, b"slow down", RateLimited, 429, "Backend 'b1' is rate limiting: slow down",
        headers=(("Retry-After", "7"),), retry_after="7",
    ),
    "429 fractional Retry-After rounds up": Case(
        429, b"", RateLimited, 429, "rate limiting", headers=(("retry-after", "2.5"),),
        retry_after="3",
    ),
    "429 without Retry-After defaults to 1": Case(
        429, b"", RateLimited, 429, "rate limiting", retry_after="1"
    ),
    "429 with an HTTP-date Retry-After defaults to 1": Case(
        429, b"", RateLimited, 429, "rate limiting",
        headers=(("Retry-After", "Wed, 21 Oct 2015 07:28:00 GMT"),), retry_after="1",
    ),
    "503 with Retry-After": Case(
        503, b'{"error": {"message": "overloaded"}}', ServiceUnavailable, 503,
        "Backend 'b1' is unavailable: overloaded", headers=(("Retry-After", "30"),),
        retry_after="30",
    ),
    "503 without Retry-After defaults to 1": Case(
        503, b"", ServiceUnavailable, 503, "unavailable: no details", retry_after="1"
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_from_status(case: Case) -> None:
    retry_after = next((v for k, v in case.headers if k.lower() == "retry-after"), None)
    err = from_status(case.status, case.body, retry_after, "b1")

    assert type(err) is case.cls
    assert err.http_status() == case.http_status
    assert case.message in err.message
    assert err.param == case.param
    assert err.code == case.code
    assert err.response_headers().get("retry-after") == case.retry_after


def test_client_error_message_is_the_backends_message_exactly() -> None:
    err = from_status(400, VLLM_BODY, None, "b1")
    assert err.message == "max_tokens must be at least 1"


def test_long_error_text_is_truncated() -> None:
    err = from_status(400, b"x" * 10_000, None, "b1")
    assert err.message == "x" * 500


def test_non_utf8_text_does_not_break() -> None:
    err = from_status(400, b"\xff\xfe oops", None, "b1")
    assert "oops" in err.message


# id -> (exception, class, status, code)
EXCEPTIONS: dict[str, tuple[BaseException, type[GatewayError], int, str]] = {
    "connect refused": (
        ConnectFailed("connect to h:1 failed: refused"), BadGateway, 502, "upstream_connect"
    ),
    "connect timeout": (
        ConnectFailed("connect to h:1 timed out"), BadGateway, 502, "upstream_connect"
    ),
    "asyncio timeout": (TimeoutError(), GatewayTimeout, 504, "upstream_timeout"),
    "closed early": (
        ProtocolFailed("the backend closed the connection"), BadGateway, 502, "upstream_protocol"
    ),
    "bad http": (
        ProtocolFailed("invalid HTTP from the backend: x"), BadGateway, 502, "upstream_protocol"
    ),
}  # fmt: skip


@pytest.mark.parametrize(
    ("exc", "cls", "status", "code"), EXCEPTIONS.values(), ids=EXCEPTIONS.keys()
)
def test_from_exception(
    exc: BaseException, cls: type[GatewayError], status: int, code: str
) -> None:
    err = from_exception(exc, "b1")

    assert type(err) is cls
    assert err.http_status() == status
    assert err.code == code
    assert "'b1'" in err.message


def test_protocol_error_says_what_happened() -> None:
    err = from_exception(ProtocolFailed("the backend closed the connection"), "b1")
    assert "the backend closed the connection" in err.message


def test_invalid_response() -> None:
    err = invalid_response("b1", "not JSON")
    assert err.http_status() == 502
    assert err.code == "upstream_invalid"
    assert err.message == "Backend 'b1' sent an invalid response: not JSON"
