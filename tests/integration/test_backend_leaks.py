"""Nothing a backend says reaches the client unfiltered: a real backend (uvicorn on 127.0.0.1)
quotes the key the gateway sent it, in errors and answers, streaming and not; neither the key
nor its tail shows up in the client's body, the access log, any other log or /metrics."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import httpx2 as httpx
import orjson
import pytest

from gateway.access_log import ACCESS_LOGGER
from tests.integration.conftest import GatewayFactory
from tests.support.policies import single_pool
from tests.support.quoting_backend import quoting_backend
from tests.support.security import QUOTED_KEY, QUOTED_TAIL, UPSTREAM_ENV
from tests.support.servers import serve

CHAT = "/v1/chat/completions"

# id -> (quote, stream, status the client gets, what the client is told instead)
CASES: dict[str, tuple[str, bool, int, str]] = {
    "401 quoting the key": ("401", False, 502, "refused the gateway's credentials"),
    "401 with OpenAI's masked key": ("401_masked", False, 502, "refused the gateway's credentials"),
    "400 with the key in message, param and code": ("400", False, 400, "may not ask this"),
    "500 in plain text": ("500", False, 502, "answered HTTP 500"),
    "429": ("429", False, 429, "is rate limiting"),
    "200 echoing the key": ("echo", False, 200, "You sent [redacted]."),
    "stream echoing the key": ("echo", True, 200, "you sent [redacted]"),
    "error event in the stream": ("error", True, 200, "answered HTTP 500"),
}


@pytest.fixture
def leaky(start_gateway: GatewayFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv(UPSTREAM_ENV, QUOTED_KEY)
    with serve(quoting_backend()) as backend:
        policy = single_pool(backend, extra="pools: {small: {retry: {attempts: 1}}}").replace(
            "    max_inflight: 32", f"    max_inflight: 32\n    api_key_env: {UPSTREAM_ENV}"
        )
        with start_gateway(policy) as url:
            yield url


@pytest.mark.parametrize(("quote", "stream", "status", "told"), CASES.values(), ids=list(CASES))
def test_the_backends_words_are_filtered(
    leaky: str,
    caplog: pytest.LogCaptureFixture,
    quote: str,
    stream: bool,
    status: int,
    told: str,
) -> None:
    caplog.set_level(logging.DEBUG)
    body = {"model": "fast", "messages": [{"role": "user", "content": "hi"}], "quote": quote}
    with httpx.Client(base_url=leaky) as http:
        answer = http.post(CHAT, content=orjson.dumps({**body, "stream": stream}))
        metrics = http.get("/metrics").text
    assert answer.status_code == status
    shown = answer.text + str(answer.headers)
    assert told in shown
    logs = caplog.text
    access = [r.getMessage() for r in caplog.records if r.name == ACCESS_LOGGER]
    assert len(access) == 1
    for where in (shown, logs, metrics):
        assert QUOTED_KEY not in where
        assert QUOTED_TAIL not in where
    if stream and quote == "error":
        events = [line for line in answer.text.splitlines() if line.startswith("data: {")]
        assert orjson.loads(events[-1][6:])["error"]["code"] == "upstream_status"
        assert orjson.loads(access[0])["status"] == 502
