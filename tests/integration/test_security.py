"""Security on the real path: keys and tenants, upstream credentials, input limits, admin
protection, slow clients. Real uvicorn servers on 127.0.0.1, the OpenAI SDK as the client."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterator

import httpx2 as httpx
import openai
import orjson
import pytest

from gateway.access_log import ACCESS_LOGGER
from gateway.app import build_app
from gateway.policy import load_policy_text
from gateway.security.api_keys import hash_key
from gateway.security.slow_clients import header_timeout_protocol
from loadtests.kit.fake_upstream import FakeLog
from tests.integration.conftest import GatewayFactory
from tests.support.policies import single_pool
from tests.support.security import (
    ADMIN_KEY,
    TENANT_A_KEY,
    TENANT_B_KEY,
    UPSTREAM_ENV,
    UPSTREAM_SECRET,
    tenants_yaml,
)

HELLO = [{"role": "user", "content": "hello"}]


def _sdk(url: str, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=url + "/v1", api_key=key, max_retries=0, timeout=10)


@pytest.fixture
def secured(
    upstream: str, start_gateway: GatewayFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    monkeypatch.setenv(UPSTREAM_ENV, UPSTREAM_SECRET)
    policy = single_pool(upstream) + tenants_yaml(
        alpha_extra="      rate_limit: {requests_per_minute: 1000}"
    )
    policy = policy.replace(
        "    max_inflight: 32", f"    max_inflight: 32\n    api_key_env: {UPSTREAM_ENV}"
    )
    with start_gateway(policy) as url:
        yield url


def test_missing_or_wrong_key_is_401_openai_shaped(secured: str) -> None:
    with pytest.raises(openai.AuthenticationError) as refused:
        _sdk(secured, "sk-wrong-key").chat.completions.create(model="fast", messages=HELLO)  # type: ignore[arg-type]
    assert refused.value.response.json()["error"]["code"] == "invalid_api_key"
    missing = httpx.post(
        secured + "/v1/chat/completions", json={"model": "fast", "messages": HELLO}
    )
    assert missing.status_code == 401
    assert missing.json()["error"] == {
        "message": "Missing API key: send 'Authorization: Bearer <key>'.",
        "type": "authentication_error",
        "param": None,
        "code": "missing_api_key",
    }
    raw = httpx.post(secured + "/v1/chat/completions", content=b"not even json")
    assert raw.status_code == 401  # before the body is looked at
    models = httpx.get(secured + "/v1/models")
    assert models.status_code == 401


def test_tenant_keys_reach_their_models_only(secured: str, fake_log: FakeLog) -> None:
    answer = _sdk(secured, TENANT_A_KEY).chat.completions.create(model="fast", messages=HELLO)  # type: ignore[arg-type]
    assert answer.choices[0].message.content
    bravo = _sdk(secured, TENANT_B_KEY)
    with pytest.raises(openai.PermissionDeniedError) as refused:
        bravo.chat.completions.create(model="auto", messages=HELLO)  # type: ignore[arg-type]
    assert refused.value.response.json()["error"]["code"] == "model_not_allowed"
    assert [m.id for m in bravo.models.list()] == ["fast"]
    assert len(fake_log.bodies) == 1


def test_upstream_gets_its_own_key_and_never_the_clients(secured: str, fake_log: FakeLog) -> None:
    http = httpx.Client(base_url=secured)
    response = http.post(
        "/v1/chat/completions",
        json={"model": "fast", "messages": HELLO, "base_url": "http://evil.example"},
        headers={
            "authorization": f"Bearer {TENANT_A_KEY}",
            "host": "evil.example",
            "x-forwarded-host": "evil.example",
            "cookie": "session=abc",
        },
    )
    assert response.status_code == 200
    seen = fake_log.headers[-1]
    assert seen["authorization"] == f"Bearer {UPSTREAM_SECRET}"
    assert "cookie" not in seen
    assert "x-forwarded-host" not in seen
    assert seen["host"].startswith("127.0.0.1:")
    assert TENANT_A_KEY not in str(fake_log.headers)


# (key, x-gateway-priority sent, priority in the access log): alpha's policy says critical,
# bravo's says standard (the default).
PRIORITIES = [
    (TENANT_A_KEY, None, "critical"),
    (TENANT_A_KEY, "sheddable", "sheddable"),
    (TENANT_B_KEY, None, "standard"),
    (TENANT_B_KEY, "critical", "standard"),
    (TENANT_B_KEY, "sheddable", "sheddable"),
]


def test_a_tenant_priority_is_a_ceiling_and_the_access_log_shows_the_effective_one(
    secured: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=ACCESS_LOGGER)
    with httpx.Client(base_url=secured) as http:
        for key, asked, _ in PRIORITIES:
            headers = {"authorization": f"Bearer {key}"}
            if asked is not None:
                headers["x-gateway-priority"] = asked
            answer = http.post(
                "/v1/chat/completions", json={"model": "fast", "messages": HELLO}, headers=headers
            )
            assert answer.status_code == 200
    lines = [orjson.loads(r.getMessage()) for r in caplog.records if r.name == ACCESS_LOGGER]
    assert [line["priority"] for line in lines] == [effective for _, _, effective in PRIORITIES]


def test_admin_policy_shows_the_variable_name_not_the_secret(secured: str) -> None:
    shown = httpx.get(secured + "/admin/policy")
    assert shown.status_code == 200  # loopback client, localhost mode
    assert UPSTREAM_ENV in shown.text
    assert UPSTREAM_SECRET not in shown.text
    assert TENANT_A_KEY not in shown.text


def test_tenant_rate_limit_gives_429_with_retry_after(
    upstream: str, start_gateway: GatewayFactory
) -> None:
    policy = single_pool(upstream) + tenants_yaml(
        alpha_extra="      rate_limit: {requests_per_minute: 2}"
    )
    with start_gateway(policy) as url:
        client = _sdk(url, TENANT_A_KEY)
        for _ in range(2):
            client.chat.completions.create(model="fast", messages=HELLO)  # type: ignore[arg-type]
        with pytest.raises(openai.RateLimitError) as refused:
            client.chat.completions.create(model="fast", messages=HELLO)  # type: ignore[arg-type]
        # One request refills every 30 s; rounded up to whole seconds.
        assert int(refused.value.response.headers["retry-after"]) in (29, 30)
        assert refused.value.response.json()["error"]["code"] == "rate_limit_exceeded"
        # Another tenant has its own bucket.
        _sdk(url, TENANT_B_KEY).chat.completions.create(model="fast", messages=HELLO)  # type: ignore[arg-type]
        metrics = httpx.get(url + "/metrics").text
    # Per-tenant counts, the refusal included; tokens only for what a backend processed.
    assert 'gateway_tenant_requests_total{model="fast",status="200",tenant="alpha"} 2.0' in metrics
    assert 'gateway_tenant_requests_total{model="fast",status="429",tenant="alpha"} 1.0' in metrics
    assert 'gateway_tenant_requests_total{model="fast",status="200",tenant="bravo"} 1.0' in metrics
    prompt = _sample(metrics, 'gateway_tenant_tokens_total{kind="prompt",tenant="alpha"}')
    completion = _sample(metrics, 'gateway_tenant_tokens_total{kind="completion",tenant="bravo"}')
    assert prompt > 0
    assert completion > 0


def _sample(metrics: str, name: str) -> float:
    line = next(line for line in metrics.splitlines() if line.startswith(name + " "))
    return float(line.rsplit(" ", 1)[1])


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"messages": HELLO * 3}, "messages"),
        ({"messages": [{"role": "user", "content": "x" * 101}]}, "messages[0].content"),
        ({"n": 3}, "n"),
        ({"max_tokens": 1000}, "max_tokens"),
    ],
)
def test_input_limits_give_a_400_naming_the_field(
    upstream: str, start_gateway: GatewayFactory, fields: dict[str, object], param: str
) -> None:
    limits = "limits: {max_messages: 2, max_message_chars: 100, max_n: 2, max_tokens: 500}\n"
    with start_gateway(single_pool(upstream) + limits) as url:
        body = {"model": "fast", "messages": HELLO, **fields}
        response = httpx.post(url + "/v1/chat/completions", json=body)
        assert response.status_code == 400
        assert response.json()["error"]["param"] == param


def test_max_tokens_clamped_when_the_policy_says_so(
    upstream: str, start_gateway: GatewayFactory, fake_log: FakeLog
) -> None:
    limits = "limits: {max_tokens: 50, max_tokens_action: clamp}\n"
    with start_gateway(single_pool(upstream) + limits) as url:
        client = _sdk(url, "unused")
        client.chat.completions.create(model="fast", messages=HELLO, max_tokens=4000)  # type: ignore[arg-type]
    assert fake_log.bodies[-1]["max_tokens"] == 50


def test_admin_key_mode(upstream: str, start_gateway: GatewayFactory) -> None:
    admin = f'admin: {{mode: key, keys: ["{hash_key(ADMIN_KEY)}"]}}\n'
    with start_gateway(single_pool(upstream) + admin) as url:
        refused = httpx.get(url + "/admin/policy")
        assert refused.status_code == 401
        assert refused.json()["error"]["type"] == "authentication_error"
        assert httpx.post(url + "/admin/reload").status_code == 401
        ok = httpx.get(url + "/admin/policy", headers={"authorization": f"Bearer {ADMIN_KEY}"})
        assert ok.status_code == 200
        assert httpx.get(url + "/metrics").status_code == 200  # open unless protected


def test_protected_read_only_endpoints_need_the_admin_key(
    upstream: str, start_gateway: GatewayFactory
) -> None:
    admin = f'admin: {{mode: key, keys: ["{hash_key(ADMIN_KEY)}"], protect: [metrics, openapi]}}\n'
    key = {"authorization": f"Bearer {ADMIN_KEY}"}
    with start_gateway(single_pool(upstream) + admin) as url:
        for path in ("/metrics", "/openapi.json"):
            refused = httpx.get(url + path)
            assert refused.status_code == 401, path
            assert refused.json()["error"]["code"] == "invalid_admin_key"
            assert httpx.get(url + path, headers=key).status_code == 200, path
        assert "gateway_requests_total" in httpx.get(url + "/metrics", headers=key).text
        assert httpx.get(url + "/dashboard/data").status_code == 200  # not listed: open


def test_a_slow_body_gets_408(upstream: str, start_gateway: GatewayFactory) -> None:
    server = "server: {body_timeout_s: 0.2}\n"
    with start_gateway(single_pool(upstream) + server) as url:
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(
                b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n"
                b'content-type: application/json\r\ncontent-length: 100\r\n\r\n{"model"'
            )
            answer = _read_answer(sock)  # blocks until the gateway gives up on the body
        assert answer.startswith(b"HTTP/1.1 408")
        assert b"body_timeout" in answer


def _read_answer(sock: socket.socket) -> bytes:
    """One whole response: its head and body may come in separate reads on a busy machine."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        assert chunk, "the connection closed before the whole head came"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        chunk = sock.recv(4096)
        assert chunk, "the connection closed before the whole body came"
        body += chunk
    return head + b"\r\n\r\n" + body


def _read_to_close(sock: socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(4096):
        chunks.append(chunk)
    return b"".join(chunks)


def test_slow_headers_lose_the_connection_and_connections_are_capped(upstream: str) -> None:
    import threading

    import uvicorn

    policy = load_policy_text(single_pool(upstream))
    config = uvicorn.Config(
        build_app(policy),
        host="127.0.0.1",
        port=0,
        log_level="warning",
        http=header_timeout_protocol(0.2),
        limit_concurrency=3,
    )
    server = uvicorn.Server(config)
    server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        started = threading.Event()
        for _ in range(1500):
            if server.started:
                started.set()
                break
            started.wait(0.01)
        assert started.is_set()
        address = ("127.0.0.1", server.servers[0].sockets[0].getsockname()[1])
        slow = [socket.create_connection(address, timeout=10) for _ in range(2)]
        for sock in slow:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\n")  # never finishes the head
        with socket.create_connection(address, timeout=10) as third:
            third.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
            refused = _read_to_close(third)  # over the connection cap
            assert refused.startswith(b"HTTP/1.1 503")
            assert b'"code":"too_many_connections"' in refused
            assert b"retry-after: 1" in refused
        for sock in slow:
            assert sock.recv(4096) == b""  # closed by the gateway, well before our 10 s
            sock.close()
        with socket.create_connection(address, timeout=10) as sock:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
            answer = b""
            while b'{"status":"ok"}' not in answer:
                answer += sock.recv(4096)
            assert answer.startswith(b"HTTP/1.1 200")
            # The next request on the kept-alive connection is timed too: its head trickles.
            sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\n")
            start = time.monotonic()
            assert sock.recv(4096) == b""  # closed by the header timer (0.2 s)
            assert time.monotonic() - start < 4.0  # not by uvicorn's 5 s keep-alive timeout
        with socket.create_connection(address, timeout=10) as sock:
            sock.sendall(b"NOT HTTP AT ALL\r\n\r\n")
            answer = _read_to_close(sock)  # uvicorn's parser refuses it: OpenAI-shaped too
            assert answer.startswith(b"HTTP/1.1 400")
            head, body = answer.split(b"\r\n\r\n", 1)
            assert b"content-type: application/json" in head
            error = orjson.loads(body)["error"]
            assert (error["type"], error["code"]) == ("invalid_request_error", "invalid_http")
    finally:
        server.should_exit = True
        thread.join(timeout=15)


def test_replicas_share_tenant_limits_through_redis(
    upstream: str, start_gateway: GatewayFactory, redis_url: str
) -> None:
    auth = tenants_yaml(alpha_extra="      rate_limit: {requests_per_minute: 2}").replace(
        "auth:\n", f"auth:\n  rate_limit_store: redis\n  redis_url: {redis_url}\n"
    )
    policy = single_pool(upstream) + auth
    with start_gateway(policy) as one, start_gateway(policy) as two:
        _sdk(one, TENANT_A_KEY).chat.completions.create(model="fast", messages=HELLO)  # type: ignore[arg-type]
        _sdk(two, TENANT_A_KEY).chat.completions.create(model="fast", messages=HELLO)  # type: ignore[arg-type]
        for url in (one, two):
            with pytest.raises(openai.RateLimitError) as refused:
                _sdk(url, TENANT_A_KEY).chat.completions.create(model="fast", messages=HELLO)  # type: ignore[arg-type]
            assert int(refused.value.response.headers["retry-after"]) in (29, 30)
