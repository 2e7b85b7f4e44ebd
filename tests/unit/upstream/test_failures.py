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
from gateway.security.redact import Redactor
from gateway.upstream import ConnectFailed, ProtocolFailed
from gateway.upstream.failures import (
    from_event,
    from_exception,
    from_status,
    invalid_response,
    is_error_event,
)

NO_SECRETS = Redactor()
KEY = "sk-proj-Qm7vXz2LrT9wKp4NcB8jHs3GdF6yAe1U"  # what the gateway sends upstream
SECRETS = Redactor([KEY])

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
        401, b'{"error": {"message": "bad key"}}', BadGateway, 502,
        "answered HTTP 401: it refused the gateway's credentials", code="upstream_status",
    ),
    "403": Case(403, b"forbidden", BadGateway, 502, "HTTP 403", code="upstream_status"),
    "404 unknown model": Case(
        404, OPENAI_BODY, BadGateway, 502, "Backend 'b1' answered HTTP 404", code="upstream_status"
    ),
    "500": Case(500, b"Internal Server Error", BadGateway, 502, "Backend 'b1' answered HTTP 500.",
                code="upstream_status"),
    "429 with Retry-After": Case(
        429, b"slow down", RateLimited, 429, "Backend 'b1' is rate limiting.",
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
        "Backend 'b1' is unavailable.", headers=(("Retry-After", "30"),),
        retry_after="30",
    ),
    "503 without Retry-After defaults to 1": Case(
        503, b"", ServiceUnavailable, 503, "unavailable.", retry_after="1"
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_from_status(case: Case) -> None:
    retry_after = next((v for k, v in case.headers if k.lower() == "retry-after"), None)
    err = from_status(case.status, case.body, retry_after, "b1", NO_SECRETS)

    assert type(err) is case.cls
    assert err.http_status() == case.http_status
    assert case.message in err.message
    assert err.param == case.param
    assert err.code == case.code
    assert err.response_headers().get("retry-after") == case.retry_after


def test_client_error_message_is_the_backends_message_exactly() -> None:
    err = from_status(400, VLLM_BODY, None, "b1", NO_SECRETS)
    assert err.message == "max_tokens must be at least 1"


def test_long_error_text_is_truncated() -> None:
    err = from_status(400, b"x" * 10_000, None, "b1", NO_SECRETS)
    assert err.message == "x" * 500


def test_non_utf8_text_does_not_break() -> None:
    err = from_status(400, b"\xff\xfe oops", None, "b1", NO_SECRETS)
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


RETRYABLE_STATUSES = {
    400: False, 401: False, 404: False, 413: False, 422: False, 429: True, 500: True,
    501: False, 502: True, 503: True, 504: True,
}  # fmt: skip


@pytest.mark.parametrize(("status", "retryable"), RETRYABLE_STATUSES.items())
def test_which_statuses_another_replica_may_take(status: int, retryable: bool) -> None:
    assert from_status(status, b"", None, "b1", NO_SECRETS).retryable is retryable


# id -> (exception, before the response head, retryable)
RETRYABLE_FAILURES: dict[str, tuple[BaseException, bool, bool]] = {
    "refused": (ConnectFailed("connect to h:1 failed: refused"), True, True),
    "reset after sending": (ProtocolFailed("the backend closed the connection"), True, True),
    "bad head": (ProtocolFailed("invalid HTTP from the backend: x"), True, True),
    "closed mid-body": (ProtocolFailed("the backend closed the connection"), False, False),
    "gateway's own timeout": (TimeoutError(), True, False),
}


@pytest.mark.parametrize(
    ("exc", "before_head", "retryable"), RETRYABLE_FAILURES.values(), ids=RETRYABLE_FAILURES.keys()
)
def test_which_failures_another_replica_may_take(
    exc: BaseException, before_head: bool, retryable: bool
) -> None:
    assert from_exception(exc, "b1", before_head=before_head).retryable is retryable


def test_protocol_error_says_what_happened() -> None:
    err = from_exception(ProtocolFailed("the backend closed the connection"), "b1")
    assert "the backend closed the connection" in err.message


def test_invalid_response() -> None:
    err = invalid_response("b1", "not JSON")
    assert err.http_status() == 502
    assert err.code == "upstream_invalid"
    assert err.message == "Backend 'b1' sent an invalid response: not JSON"


def _quoting(message: str, **fields: object) -> bytes:
    return orjson.dumps({"error": {"message": message, "type": "x", **fields}})


# id -> a backend's error body that quotes the key it got
QUOTES: dict[str, bytes] = {
    "the key": _quoting(f"Incorrect API key provided: {KEY}."),
    "OpenAI's masked form": _quoting(f"Incorrect API key provided: {KEY[:8]}{'*' * 24}{KEY[-4:]}."),
    "dots": _quoting(f"Incorrect API key provided: {KEY[:6]}...{KEY[-4:]}"),
    "its tail only": _quoting(f"The key ending in {KEY[-4:]} is not valid."),
    "a bearer header": _quoting(f"Got header Authorization: Bearer {KEY}"),
    "in param and code": _quoting("bad", param=KEY, code=KEY),
    "plain text": f"unauthorized {KEY}".encode(),
    "JSON-escaped": orjson.dumps({"detail": f'key "{KEY}"'}),
}


@pytest.mark.parametrize("body", QUOTES.values(), ids=list(QUOTES))
@pytest.mark.parametrize("status", [400, 401, 403, 404, 413, 422, 429, 500, 502, 503, 504])
def test_neither_the_key_nor_its_tail_reaches_the_client(body: bytes, status: int) -> None:
    err = from_status(status, body, None, "b1", SECRETS)
    shown = err.body_bytes().decode()
    assert KEY not in shown
    assert KEY[-4:] not in shown
    assert KEY[:12] not in shown
    if status not in (400, 413, 422):
        assert "Incorrect" not in shown  # only the client's own faults carry the backend's words


def test_key_shaped_text_is_redacted_without_the_key_configured() -> None:
    body = _quoting("Bad credentials for hf_AbCdEfGhIjKlMnOpQrStUv and Bearer abc.def.ghi123")
    message = from_status(400, body, None, "b1", NO_SECRETS).message
    assert message == "Bad credentials for [redacted] and Bearer [redacted]"


def test_control_characters_are_flattened() -> None:
    err = from_status(400, _quoting("line one\r\nline two\x1b[31m"), None, "b1", NO_SECRETS)
    assert err.message == "line one line two [31m"


# id -> (event, is an error event)
EVENTS: dict[str, tuple[dict[str, object], bool]] = {
    "chunk": ({"choices": [{"delta": {"content": "error"}}]}, False),
    "usage chunk": ({"choices": [], "usage": {"prompt_tokens": 1}}, False),
    "null error field": ({"id": "c1", "error": None}, False),
    "vLLM error": ({"error": {"message": "m", "code": 400}}, True),
    "TGI error": ({"error": "Input validation error", "error_type": "validation"}, True),
    "object error": ({"object": "error", "message": "m"}, True),
}


@pytest.mark.parametrize(("event", "error"), EVENTS.values(), ids=list(EVENTS))
def test_is_error_event(event: dict[str, object], error: bool) -> None:
    assert is_error_event(event) is error


# id -> (event, class, HTTP status, message fragment)
STREAM_ERRORS: dict[str, tuple[dict[str, object], type[GatewayError], int, str]] = {
    "vLLM client fault": (
        {"error": {"message": "prompt too long", "code": 400}}, UpstreamClientError, 400,
        "prompt too long",
    ),
    "vLLM server fault quoting the key": (
        {"error": {"message": f"engine died, key {KEY}", "code": 500}}, BadGateway, 502,
        "Backend 'b1' answered HTTP 500.",
    ),
    "TGI string": (
        {"error": f"Bearer {KEY} rejected", "error_type": "generation"}, BadGateway, 502,
        "answered HTTP 500.",
    ),
}  # fmt: skip


@pytest.mark.parametrize(
    ("event", "cls", "status", "message"), STREAM_ERRORS.values(), ids=list(STREAM_ERRORS)
)
def test_from_event(
    event: dict[str, object], cls: type[GatewayError], status: int, message: str
) -> None:
    err = from_event(event, "b1", SECRETS)
    assert type(err) is cls
    assert err.http_status() == status
    assert message in err.message
    assert KEY[-4:] not in err.body_bytes().decode()
