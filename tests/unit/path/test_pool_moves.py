"""Moving a request to a pool planning did not choose (degrade, fallback) checks that pool's
context window first."""

from __future__ import annotations

import pytest

from gateway.openai.request import ParsedRequest
from gateway.path.admit import may_degrade
from gateway.path.context import RequestContext, fits_pool
from gateway.path.plan import plan_pool
from gateway.policy import load_policy_text

POLICY = """
backends:
  - {name: l0, url: "http://127.0.0.1:1", model: m, pool: large}
  - {name: s0, url: "http://127.0.0.1:2", model: m, pool: small}
models:
  auto: {route: auto}
  fixed: {pool: large}
routing:
  default_pool: large
pools:
  large: {admission: {degrade_to: small}}
  small: {max_context: 600}
"""


def context(model: str, words: int, max_tokens: int | None = None) -> RequestContext:
    body: dict[str, object] = {
        "model": model,
        "messages": [{"role": "user", "content": " ".join(["word"] * words)}],
    }
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    request = ParsedRequest("chat", model, False, body)
    return RequestContext("r", 0.0, request, load_policy_text(POLICY), {})


@pytest.mark.parametrize(
    ("words", "max_tokens", "fits"),
    [
        (10, None, True),
        (10, 500, True),
        (10, 600, False),  # the completion budget counts too
        (800, None, False),
    ],
)
def test_fits_pool_counts_prompt_and_completion(
    words: int, max_tokens: int | None, fits: bool
) -> None:
    ctx = context("auto", words, max_tokens)
    plan = plan_pool(ctx)
    assert plan.pool.name == "large"
    assert fits_pool(ctx, plan, ctx.policy.pools["small"]) is fits
    assert fits_pool(ctx, plan, ctx.policy.pools["large"])  # no limit there


@pytest.mark.parametrize(
    ("model", "words", "smaller", "allowed"),
    [
        ("auto", 10, "small", True),
        ("auto", 800, "small", False),  # would not fit the smaller pool's window
        ("auto", 800, None, True),
        ("fixed", 10, "small", False),  # the client chose the model: never moved
    ],
)
def test_only_auto_requests_that_fit_may_degrade(
    model: str, words: int, smaller: str | None, allowed: bool
) -> None:
    ctx = context(model, words)
    assert may_degrade(ctx, plan_pool(ctx), smaller) is allowed
