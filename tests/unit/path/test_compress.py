"""The compression stage: budgets, opting out, and who checks the context window."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from gateway.classify import EstimateCounter
from gateway.errors import InvalidRequest
from gateway.metrics import GatewayMetrics
from gateway.openai.request import ParsedRequest
from gateway.path.compress import compress_request
from gateway.path.context import RequestContext
from gateway.path.plan import plan_pool
from gateway.policy import load_policy_text
from tests.unit.rewrite.compress_helpers import conversation

COUNTER = EstimateCounter()
CHAT = conversation(30, size=15)  # about 3,800 estimated tokens


def _policy(pool: str) -> str:
    return f"""
backends:
  - {{name: m0, url: "http://127.0.0.1:1", model: m, pool: main}}
models:
  chat: {{pool: main}}
pools:
  main: {pool}
"""


def _run(
    pool: str, body: dict[str, Any], headers: dict[str, str] | None = None
) -> tuple[RequestContext, dict[str, str], GatewayMetrics]:
    policy = load_policy_text(_policy(pool))
    endpoint = "chat" if "messages" in body else "completions"
    request = ParsedRequest(endpoint, "chat", False, {"model": "chat", **body})
    ctx = RequestContext("r", 0.0, request, policy, headers or {})
    out: dict[str, str] = {}
    metrics = GatewayMetrics(CollectorRegistry())
    return compress_request(ctx, plan_pool(ctx), None, metrics, out)[0], out, metrics


@pytest.mark.parametrize(
    ("pool", "max_tokens", "budget"),
    [
        # The window's prompt room less the 10% margin for the estimate's error.
        ("{max_context: 2000, compression: {enabled: true}}", 100, 1710),
        ("{max_context: 2000, compression: {enabled: true}}", None, int((2000 - 256) * 0.9)),
        ("{max_context: 2000, compression: {enabled: true, reserve_tokens: 500}}", None, 1350),
        ("{max_context: 2000, compression: {enabled: true, context_margin: 0}}", 100, 1900),
        ("{compression: {enabled: true, budget_tokens: 1000}}", 100, 1000),
        ("{max_context: 2000, compression: {enabled: true, budget_tokens: 1200}}", 900, 990),
    ],
)
def test_compressed_under_the_budget(pool: str, max_tokens: int | None, budget: int) -> None:
    body: dict[str, Any] = {"messages": CHAT}
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    ctx, headers, metrics = _run(pool, body)
    sent = ctx.request.body["messages"]
    tokens = COUNTER.count_messages(sent)
    assert tokens <= budget
    assert headers["x-gateway-compressed"].endswith(
        f"tokens={COUNTER.count_messages(CHAT)}->{tokens}"
    )
    assert sent[-2:] == CHAT[-2:]
    assert ctx.request.body["model"] == "chat"
    sample = metrics.registry.get_sample_value(
        "gateway_compressions_total", {"pool": "main", "method": "truncated"}
    )
    assert sample == 1


def test_a_fitting_request_is_left_alone() -> None:
    ctx, headers, _ = _run("{max_context: 32000, compression: {enabled: true}}", {"messages": CHAT})
    assert ctx.request.body["messages"] is CHAT
    assert not headers


@pytest.mark.parametrize(
    ("pool", "body", "headers"),
    [
        ("{max_context: 2000}", {"messages": CHAT}, {}),
        (
            "{max_context: 2000, compression: {enabled: true}}",
            {"messages": CHAT},
            {"x-gateway-rewrite": "OFF"},
        ),
        (
            "{max_context: 2000, compression: {enabled: true, keep_last_turns: 29}}",
            {"messages": CHAT},
            {},
        ),
        (
            "{max_context: 2000, compression: {enabled: true}}",
            {"messages": CHAT, "max_tokens": 2000},
            {},
        ),
        ("{max_context: 2000, compression: {enabled: true}}", {"prompt": "word " * 3000}, {}),
    ],
    ids=["compression off", "client opted out", "kept part too big", "no room", "completions"],
)
def test_over_the_context_window_is_a_400(
    pool: str, body: dict[str, Any], headers: dict[str, str]
) -> None:
    with pytest.raises(InvalidRequest) as info:
        _run(pool, body, headers)
    assert info.value.code == "context_length_exceeded"
    assert "maximum context length is 2000 tokens" in info.value.message


def test_a_missed_budget_within_the_context_is_sent_unchanged() -> None:
    pool = "{max_context: 32000, compression: {enabled: true, budget_tokens: 500}}"
    ctx, headers, _ = _run(pool, {"messages": CHAT})
    assert ctx.request.body["messages"] == CHAT
    assert "x-gateway-compressed" not in headers


def test_the_plan_carries_the_compressed_count() -> None:
    # Later moves (degrade, fallback) check other pools' windows with the plan's count.
    policy = load_policy_text(_policy("{max_context: 2000, compression: {enabled: true}}"))
    request = ParsedRequest("chat", "chat", False, {"model": "chat", "messages": CHAT})
    ctx = RequestContext("r", 0.0, request, policy, {})
    planned = plan_pool(ctx)
    metrics = GatewayMetrics(CollectorRegistry())
    ctx, plan = compress_request(ctx, planned, None, metrics, {})
    assert planned.prompt_tokens is not None
    assert planned.prompt_tokens > 2000
    assert plan.prompt_tokens == COUNTER.count_messages(ctx.request.body["messages"])
