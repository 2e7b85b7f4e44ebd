"""Every error the gateway itself returns is OpenAI-shaped with the right status."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import httpx2 as httpx
import openai
import pytest

from tests.integration.conftest import GatewayFactory
from tests.support.policies import single_pool

CHAT = "/v1/chat/completions"
GOOD = {"model": "fast", "messages": [{"role": "user", "content": "hi"}]}


def _assert_openai_error(response: httpx.Response, status: int) -> dict[str, object]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert isinstance(error["message"], str)
    assert error["message"]
    assert "Traceback" not in response.text
    return dict(error)


@pytest.fixture
def http(gateway: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=gateway, timeout=10) as client:
        yield client


@pytest.mark.parametrize(
    ("content", "status", "fragment"),
    [
        (b"{not json", 400, "not valid JSON"),
        (b"", 400, "empty"),
        (b"[1, 2]", 400, "JSON object"),
        (b'{"model": "fast"}', 400, "messages"),
        (b'{"model": 3, "messages": [{"role": "user", "content": "x"}]}', 400, "model"),
        (
            b'{"model": "fast", "messages": [{"role": "user", "content": "x"}], "stream": "y"}',
            400,
            "stream",
        ),
        (
            b'{"model": "fast", "messages": [{"role": "user", "content": "x"}], "max_tokens": -1}',
            400,
            "max_tokens",
        ),
    ],
)
def test_malformed_requests_are_400(
    http: httpx.Client, content: bytes, status: int, fragment: str
) -> None:
    error = _assert_openai_error(http.post(CHAT, content=content), status)
    assert fragment in str(error["message"])


def test_body_over_limit_is_413(upstream: str, start_gateway: GatewayFactory) -> None:
    policy = single_pool(upstream, extra="server: {max_body_bytes: 2048}")
    with start_gateway(policy) as url, httpx.Client(base_url=url) as http:
        big = {**GOOD, "messages": [{"role": "user", "content": "x" * 4096}]}
        _assert_openai_error(http.post(CHAT, json=big), 413)
        chunked = http.post(CHAT, content=iter([b'{"model": "fast", "x": "', b"y" * 4096, b'"}']))
        _assert_openai_error(chunked, 413)
        assert http.post(CHAT, json=GOOD).status_code == 200


def test_unknown_path_and_method(http: httpx.Client) -> None:
    _assert_openai_error(http.get("/v1/nothing"), 404)
    _assert_openai_error(http.get(CHAT), 405)


def _closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def test_no_healthy_backend_is_503_with_retry_after(start_gateway: GatewayFactory) -> None:
    with start_gateway(single_pool(_closed_port())) as url, httpx.Client(base_url=url) as http:
        ready = http.get("/readyz")
        assert ready.status_code == 503
        assert ready.json()["pools"] == {"small": False}
        response = http.post(CHAT, json=GOOD)
        error = _assert_openai_error(response, 503)
        assert error["code"] == "no_healthy_backend"
        assert int(response.headers["retry-after"]) >= 1


def test_upstream_timeout_is_504(upstream: str, start_gateway: GatewayFactory) -> None:
    policy = single_pool(
        upstream, extra="pools: {small: {timeouts: {total_s: 0.3, first_token_s: 0.2}}}"
    )
    with start_gateway(policy) as url, httpx.Client(base_url=url, timeout=10) as http:
        hang = {**GOOD, "fake": {"hang": True}}
        error = _assert_openai_error(http.post(CHAT, json=hang), 504)
        assert error["type"] == "timeout"
        stream = http.post(CHAT, json={**hang, "stream": True})
        assert stream.status_code == 504


def test_stalled_stream_ends_with_error_event_and_no_done(
    upstream: str, start_gateway: GatewayFactory
) -> None:
    policy = single_pool(upstream, extra="pools: {small: {timeouts: {idle_s: 0.2}}}")
    body = {**GOOD, "stream": True, "fake": {"tokens": 3, "itl_s": 5}}
    with start_gateway(policy) as url, httpx.Client(base_url=url, timeout=10) as http:
        response = http.post(CHAT, json=body)
    events = [line for line in response.text.split("\n") if line.startswith("data: ")]
    # No [DONE] after an error: a client must not take a cut stream for a whole answer.
    assert "data: [DONE]" not in events
    assert '"type":"timeout"' in events[-1]
    assert "tok0" in events[0]


def test_full_pool_with_no_queue_room_is_503_with_retry_after(
    upstream: str, start_gateway: GatewayFactory
) -> None:
    policy = single_pool(upstream, inflight=1, extra="pools: {small: {admission: {max_queue: 0}}}")
    with start_gateway(policy) as url, httpx.Client(base_url=url, timeout=10) as http:
        slow = {**GOOD, "stream": True, "fake": {"tokens": 2, "itl_s": 1.0}}
        with http.stream("POST", CHAT, json=slow) as first:
            assert first.status_code == 200
            second = http.post(CHAT, json=GOOD)
            error = _assert_openai_error(second, 503)  # the pool's refusal (429: a tenant's)
            assert error["code"] == "queue_full"
            assert int(second.headers["retry-after"]) >= 1


def test_sdk_sees_typed_errors(gateway: str) -> None:
    client = openai.OpenAI(base_url=gateway + "/v1", api_key="x", max_retries=0)
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="fast", messages=[{"role": "robot", "content": "x"}])  # type: ignore[misc,list-item]
