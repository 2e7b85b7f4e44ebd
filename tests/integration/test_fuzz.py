"""Fuzzing the gateway through its OpenAPI document: 10,000 generated requests.

Each of 1,000 hypothesis examples draws a body, from valid chat/completions requests with
random extra or mistyped fields to random JSON and random bytes, and sends it 10 ways: a
path and method from the document (or not), the gateway's headers with valid and invalid
values (``x-gateway-priority``, ``-deadline-ms``, ``-session``, ``-cache``, ``-rewrite``,
``x-request-id``), a tenant's key (one critical, one sheddable and limited to one model), a
broken key or none, sometimes cut short. Bodies carry what clients send: tools with JSON
schemas and tool choices, assistant tool calls and tool answers, multimodal parts (text,
images, audio, unknown types), response formats, stop lists, seeds, users, stream options.
The gateway runs as its own process (``latency-gateway serve``) with every request-path
stage on (rewriting, the exact cache, compression on a context window, tenants), in front
of a zero-delay fake upstream that never fails, so any 5xx would be the gateway's own.
Checked: no 5xx but admission's refusals (503 with a known code), every error
OpenAI-shaped, and the gateway healthy and serving afterwards.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from gateway.edge.openapi import openapi_document
from gateway.edge.routes import routes
from gateway.policy import load_policy_text
from gateway.security.api_keys import hash_key
from loadtests.kit.fake_upstream import FakeConfig, FakeLog, build_fake
from loadtests.kit.ports import free_port
from tests.support.policies import single_pool
from tests.support.processes import gateway_process, wait_ready
from tests.support.security import TENANT_A_KEY, TENANT_B_KEY
from tests.support.servers import serve

BATCH = 10
BATCHES = 1000  # 10,000 requests
DOC = openapi_document(routes(), load_policy_text(single_pool("http://127.0.0.1:1")))
PATHS = sorted(DOC["paths"])
ERROR_KEYS = {"message", "type", "param", "code"}

json_leaf = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
json_value = st.recursive(
    json_leaf,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=10,
)
# Header values must be printable, without line breaks or edge spaces, to be sent at all.
header_text = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=30).map(
    str.strip
)


def _maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.none() | strategy


# A tool's parameters: a JSON schema, valid or not.
schema = st.fixed_dictionaries(
    {"type": st.just("object")},
    optional={
        "properties": st.dictionaries(
            st.text(max_size=8),
            st.fixed_dictionaries(
                {"type": st.sampled_from(["string", "integer", "array", "object", "nope"])},
                optional={"description": st.text(max_size=20), "enum": st.lists(json_leaf)},
            ),
            max_size=3,
        ),
        "required": st.lists(st.text(max_size=8), max_size=2),
        "additionalProperties": st.booleans(),
    },
)
tool = st.fixed_dictionaries(
    {
        "type": st.just("function") | st.text(max_size=8),
        "function": st.fixed_dictionaries(
            {"name": st.text(max_size=16)},
            optional={"description": st.text(max_size=40), "parameters": schema | json_value},
        )
        | json_value,
    }
)
part = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=50)}),
    st.fixed_dictionaries(
        {
            "type": st.just("image_url"),
            "image_url": st.fixed_dictionaries(
                {"url": st.sampled_from(["data:image/png;base64,iVBORw0KGgo=", "http://x/y.png"])},
                optional={"detail": st.sampled_from(["low", "high", "auto", "?"])},
            )
            | json_value,
        }
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("input_audio"),
            "input_audio": st.fixed_dictionaries(
                {"data": st.just("UklGRg=="), "format": st.sampled_from(["wav", "mp3", "?"])}
            ),
        }
    ),
    st.fixed_dictionaries({"type": st.text(max_size=10)}, optional={"text": json_value}),
)
tool_call = st.fixed_dictionaries(
    {
        "id": st.text(max_size=10),
        "type": st.just("function"),
        "function": st.fixed_dictionaries(
            {"name": st.text(max_size=10), "arguments": st.text(max_size=40) | json_value}
        ),
    }
)
message = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["system", "user", "assistant", "tool", "developer"])
        | st.text(max_size=8),
        "content": st.text(max_size=200) | st.lists(part, max_size=4) | json_value,
    },
    optional={
        "tool_calls": st.lists(tool_call, max_size=2) | json_value,
        "tool_call_id": st.text(max_size=10),
        "name": st.text(max_size=10),
    },
)
# Field names the fake upstream acts on ("fake") are kept out: they ask it to fail.
extra_field = st.text(max_size=12).filter(lambda k: k != "fake")
common = {
    "model": st.sampled_from(["fast", "auto", "nope", ""]) | json_value,
    "stream": st.booleans() | json_value,
    "max_tokens": st.integers(-5, 5000) | json_value,
    "n": st.integers(-1, 200) | json_value,
    "temperature": st.floats(-1, 3) | json_value,
    "tools": st.lists(tool, max_size=3) | json_value,
    "tool_choice": st.sampled_from(["auto", "none", "required"])
    | st.fixed_dictionaries(
        {
            "type": st.just("function"),
            "function": st.fixed_dictionaries({"name": st.text(max_size=8)}),
        }
    )
    | json_value,
    "response_format": st.fixed_dictionaries(
        {"type": st.sampled_from(["text", "json_object", "json_schema", "?"])},
        optional={
            "json_schema": st.fixed_dictionaries({"name": st.text(max_size=8), "schema": schema})
        },
    )
    | json_value,
    "stop": st.text(max_size=5) | st.lists(st.text(max_size=5), max_size=5) | json_value,
    "seed": st.integers(-(2**63), 2**64) | json_value,
    "user": st.text(max_size=20) | json_value,
    "stream_options": st.fixed_dictionaries({"include_usage": st.booleans() | json_value})
    | json_value,
    "top_p": st.floats(-1, 2) | json_value,
    "logprobs": st.booleans() | json_value,
}


def _body(required: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    optional = {k: v for k, v in {**common, "x": json_value}.items() if k not in required}
    return st.fixed_dictionaries(required, optional=optional).flatmap(
        lambda body: st.dictionaries(extra_field, json_value, max_size=2).map(
            lambda extra: {**extra, **body}
        )
    )


chat_body = _body(
    {
        "model": st.sampled_from(["fast", "auto"]),
        "messages": st.lists(message, min_size=1, max_size=5),
    }
)
completion_body = _body({"model": st.just("fast"), "prompt": st.text(max_size=100) | json_value})
raw_body = (
    chat_body.map(lambda b: json.dumps(b).encode())
    | completion_body.map(lambda b: json.dumps(b).encode())
    | json_value.map(lambda v: json.dumps(v).encode())
    | st.binary(max_size=200)
)


@dataclass(frozen=True)
class Envelope:
    """How one body is sent: cheap draws from small tables, so 10,000 requests stay fast."""

    method: str
    path: str
    headers: dict[str, str]
    cut: int  # send only the first ``cut`` bytes of the body (0: all of it)


def _header(name: str, values: list[str]) -> st.SearchStrategy[dict[str, str]]:
    return st.sampled_from([{}, *({name: v} for v in values)])


_KEYS = [f"Bearer {TENANT_A_KEY}"] * 3 + [f"Bearer {TENANT_B_KEY}"] * 3
_HEADER_TABLES = [
    _header("authorization", [*_KEYS, "Bearer nope", "Basic x", "Bearer"]),
    _header("x-gateway-priority", ["critical", "standard", "sheddable", "CRITICAL", "urgent", ""]),
    _header("x-gateway-deadline-ms", ["1", "50000", "0", "-3", "soon", "1.5", "9" * 30]),
    _header("x-gateway-session", ["s1", "s2", "x" * 300, "", "..", "a b"]),
    _header("x-gateway-cache", ["bypass", "refresh", "Bypass", "maybe", ""]),
    _header("x-gateway-rewrite", ["off", "OFF", "on", ""]),
    _header("x-request-id", ["r1", "x" * 500, "../../etc"]),
    _header("content-type", ["application/json", "text/plain", "multipart/form-data"]),
]


def _merge(parts: tuple[dict[str, str], ...]) -> dict[str, str]:
    return {k: v for part in parts for k, v in part.items()}


envelopes = st.builds(
    Envelope,
    method=st.sampled_from(["POST"] * 6 + ["GET", "PUT", "DELETE"]),
    path=st.sampled_from(
        ["/v1/chat/completions"] * 6 + ["/v1/completions"] * 3 + PATHS + ["/v1/x", "/admin/"]
    ),
    headers=st.tuples(*_HEADER_TABLES).map(_merge),
    cut=st.sampled_from([0] * 8 + [1, 7, 30]),
)


@pytest.fixture
def fuzz_gateway(tmp_path: Path) -> Iterator[str]:
    """The gateway as its own process (``latency-gateway serve``: header timeout and
    connection cap included), in front of a zero-delay fake upstream."""
    config = FakeConfig(model="fake-model", ttft_s=0.0, tokens=2, itl_s=0.0)
    with serve(build_fake(config, FakeLog())) as upstream:
        path = tmp_path / "policy.yaml"
        path.write_text(single_pool(upstream, inflight=64) + STAGES)
        port = free_port()
        args = ["serve", "--policy", str(path), "--port", str(port), "--log-level", "warning"]
        with gateway_process(args) as proc:
            url = f"http://127.0.0.1:{port}"
            wait_ready(url, proc)
            yield url


# Every stage on: exact cache, rewriting (on by default), compression on a context window,
# a critical tenant and a sheddable one limited to one model.
STAGES = f"""
limits: {{max_messages: 4, max_message_chars: 150, max_tokens: 4000, max_n: 4}}
cache: {{enabled: true, semantic: {{enabled: false}}}}
pools:
  small:
    max_context: 4096
    compression: {{enabled: true, budget_tokens: 64, keep_last_turns: 1}}
auth:
  tenants:
    alpha: {{keys: ["{hash_key(TENANT_A_KEY)}"], priority: critical}}
    bravo: {{keys: ["{hash_key(TENANT_B_KEY)}"], priority: sheddable, models: [fast]}}
"""

# Admission's honest refusals (a 1 ms deadline cannot be met): 503 with a reason, not a fault.
REFUSALS = {"deadline_unmeetable", "objective_unmeetable", "queue_full", "long_queue_full"}


def _check(response: httpx.Response) -> None:
    refused = response.status_code == 503 and response.json()["error"]["code"] in REFUSALS
    assert response.status_code < 500 or refused, (response.status_code, response.text[:300])
    if response.status_code >= 400:
        error = response.json()["error"]
        assert set(error) == ERROR_KEYS, error
        assert isinstance(error["message"], str)
        assert isinstance(error["type"], str)


# 10,000 requests to a real process: minutes on a busy machine, not the default 120 s.
@pytest.mark.timeout(1800)
def test_ten_thousand_generated_requests(fuzz_gateway: str) -> None:
    statuses: Counter[int] = Counter()
    with httpx.Client(base_url=fuzz_gateway, timeout=60) as http:

        @settings(
            max_examples=BATCHES,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
            # No shrinking: a failure is reported as drawn (shrinking would resend thousands).
            phases=[Phase.explicit, Phase.generate],
        )
        @given(raw_body, st.lists(envelopes, min_size=BATCH, max_size=BATCH))
        def run(body: bytes, batch: list[Envelope]) -> None:
            for env in batch:
                content = body[: env.cut] if env.cut else body
                response = http.request(env.method, env.path, headers=env.headers, content=content)
                statuses[response.status_code] += 1
                _check(response)

        run()
        assert statuses.total() >= 10_000
        # The mix reached every layer: served, refused by validation, key, path and method.
        assert {200, 400, 401, 404, 405} <= set(statuses), statuses
        assert http.get("/healthz").json() == {"status": "ok"}
        assert http.get("/readyz").status_code == 200
        answer = http.post(
            "/v1/chat/completions",
            json={"model": "fast", "messages": [{"role": "user", "content": "still there?"}]},
            headers={"authorization": f"Bearer {TENANT_A_KEY}"},
        )
        assert answer.status_code == 200


def test_the_document_covers_every_route(fuzz_gateway: str) -> None:
    from starlette.routing import Route

    served = httpx.get(fuzz_gateway + "/openapi.json").json()
    assert served["paths"].keys() == DOC["paths"].keys()
    for route in routes():
        assert isinstance(route, Route)
        methods = {m.lower() for m in route.methods or ()} - {"head"}
        assert methods <= served["paths"][route.path_format].keys(), route.path
    # The policy's limits (STAGES) are in the document it serves.
    chat = served["components"]["schemas"]["ChatRequest"]["properties"]
    assert {"maximum": 4, "minimum": 1, "type": "integer"} in chat["n"]["anyOf"]
    assert chat["messages"]["maxItems"] == 4
