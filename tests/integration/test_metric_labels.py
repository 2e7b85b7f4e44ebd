"""A client cannot grow the gateway's metrics: hundreds of made-up model names, session ids,
users, priorities and backend error codes through a real gateway leave the number of
/metrics series where a few requests of each kind put it."""

from __future__ import annotations

import re

import httpx2 as httpx
import orjson

from tests.integration.conftest import GatewayFactory
from tests.support.policies import single_pool
from tests.support.security import TENANT_A_KEY, TENANT_B_KEY, tenants_yaml

CHAT = "/v1/chat/completions"
HELLO = [{"role": "user", "content": "hello"}]


# Which way a TTFT prediction erred depends on how fast the machine answered, not on what a
# client sent: both values come from the code, so they count as one here.
_TIMING = re.compile(r'direction="(?:under|over)"')


def _series(http: httpx.Client) -> set[str]:
    """Name and labels of every sample on /metrics."""
    text = http.get("/metrics").text
    lines = (line for line in text.splitlines() if not line.startswith("#"))
    return {_TIMING.sub('direction="*"', line.rsplit(" ", 1)[0]) for line in lines}


def _made_up_round(http: httpx.Client, tag: str, count: int) -> None:
    """``count`` of each kind of request whose labels a client or backend chooses."""
    for i in range(count):
        name = f"{tag}-{i}"
        # alpha may use every model (404 for a made-up one), bravo only "fast" (403).
        key, refused = (TENANT_A_KEY, 404) if i % 2 else (TENANT_B_KEY, 403)
        headers = {"authorization": f"Bearer {key}", "x-gateway-session": f"session-{name}"}
        priority = {**headers, "x-gateway-priority": name}
        sends = [
            (CHAT, {"model": f"model-{name}", "messages": HELLO}, headers, refused),
            ("/v1/completions", {"model": f"model-{name}", "prompt": "hi"}, headers, refused),
            (CHAT, {"model": "fast", "messages": HELLO, "user": f"user-{name}"}, headers, 200),
            (CHAT, {"model": "fast", "messages": HELLO, "stream": True}, headers, 200),
            (CHAT, {"model": "fast", "messages": HELLO}, priority, 400),
            (CHAT, _backend_error(name), headers, 400),
        ]
        for path, body, sent_headers, status in sends:
            answer = http.post(path, content=orjson.dumps(body), headers=sent_headers)
            assert answer.status_code == status, answer.text


def _backend_error(name: str) -> dict[str, object]:
    """A request the fake backend refuses with a 400 whose code is made up."""
    error = {"error": {"message": "no", "type": "invalid_request_error", "code": f"zzcode_{name}"}}
    return {
        "model": "fast",
        "messages": HELLO,
        "fake": {"status": 400, "body": orjson.dumps(error).decode()},
    }


def test_made_up_labels_do_not_grow_the_series(
    upstream: str, start_gateway: GatewayFactory
) -> None:
    with (
        start_gateway(single_pool(upstream) + tenants_yaml()) as url,
        httpx.Client(base_url=url) as http,
    ):
        # Four: the prediction-error histogram charts a first token from the fourth on (the
        # predictor's first three rest on its prior), one streamed request a round.
        _made_up_round(http, "warm", 4)
        before = _series(http)
        _made_up_round(http, "many", 60)  # 360 requests, 240 of them with a made-up value
        after = _series(http)
        text = http.get("/metrics").text
    assert after == before, sorted(after ^ before)
    assert "many-" not in text
    assert "zzcode_" not in text
    tenant_unknown = 'gateway_tenant_requests_total{model="unknown",status="404",tenant="alpha"}'
    assert f"{tenant_unknown} 64.0" in text  # 2 + 30 rounds of alpha, a chat and a completion
    assert 'gateway_upstream_errors_total{backend="small-0",kind="other"} 64.0' in text
