"""The admission stage moves a near-call auto route to the smaller pool when its own pool,
saturated, cannot meet the TTFT objective and the smaller one can; anything else is refused
there."""

from __future__ import annotations

from dataclasses import replace

import pytest
from prometheus_client import CollectorRegistry

from gateway.admission.controller import PoolAdmission
from gateway.admission.fleet import FleetView
from gateway.errors import GatewayError
from gateway.metrics import GatewayMetrics
from gateway.openai.request import ParsedRequest
from gateway.path.admit import admit
from gateway.path.context import Plan, RequestContext
from gateway.policy import load_policy_text

POLICY = load_policy_text(
    """
backends:
  - {name: l0, url: "http://127.0.0.1:1", model: m, pool: large}
  - {name: s0, url: "http://127.0.0.1:2", model: m, pool: small}
models:
  auto: {route: auto}
  fixed: {pool: large}
routing:
  default_pool: small
pools:
  small: {max_context: 600}
"""
)


def _admissions(large_s: float, small_s: float) -> dict[str, PoolAdmission]:
    """The large pool saturated (its engines report requests waiting, and it is asked
    faster than it drains), the small one not."""
    metrics = GatewayMetrics(CollectorRegistry())
    speeds = {"large": (large_s, 3.0), "small": (small_s, 0.0)}
    return {
        name: PoolAdmission(
            POLICY.pools[name],
            clock=lambda: 0.0,
            metrics=metrics,
            fleet=FleetView(ttft=lambda tokens, s=speed: (s, True), waiting=lambda w=waiting: w),
        )
        for name, (speed, waiting) in speeds.items()
    }


def _four_a_token(pool: str, chars: int) -> float:
    return chars / 4


def _ctx(model: str, words: int = 10) -> RequestContext:
    body = {"model": model, "messages": [{"role": "user", "content": " ".join(["w"] * words)}]}
    return RequestContext("r", 0.0, ParsedRequest("chat", model, False, body), POLICY, {})


@pytest.mark.parametrize(
    ("model", "margin", "large_s", "words", "pool"),
    [
        ("auto", 0.05, 3.0, 10, "small"),  # a near call, large too slow: the small pool
        ("auto", 0.05, 0.5, 10, "large"),  # large meets its objective: stays
        ("auto", 0.5, 3.0, 10, None),  # a clear call for large: refused, not moved
        ("auto", None, 3.0, 10, None),  # not routed by difficulty
        ("fixed", 0.05, 3.0, 10, None),  # the client chose the model
        ("auto", 0.05, 3.0, 900, None),  # would not fit the small pool's window
    ],
)
async def test_degrade_by_prediction(
    model: str, margin: float | None, large_s: float, words: int, pool: str | None
) -> None:
    ctx = _ctx(model, words)
    plan = Plan(POLICY.pools["large"], "rule:hard", prompt_tokens=words * 2)
    plan = replace(plan, difficulty_margin=margin)
    admissions = _admissions(large_s, small_s=0.2)
    metrics = GatewayMetrics(CollectorRegistry())
    if pool is None:
        with pytest.raises(GatewayError) as info:
            await admit(admissions, metrics, ctx, plan, _four_a_token)
        assert info.value.http_status() == 503
        assert info.value.code == "objective_unmeetable"
        return
    admitted = await admit(admissions, metrics, ctx, plan, _four_a_token)
    assert admitted.plan.pool.name == pool
    assert admitted.degraded is (pool == "small")
    admitted.permit.release(latency_s=None, dropped=False)
