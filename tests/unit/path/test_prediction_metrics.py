"""The predictor's error is charted only for predictions that rest on observations: before a
replica has been seen, the predictor's prior (a conservative guess, seconds where the engine
answers in milliseconds) refuses and hedges nothing, and its error is not the predictor's."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from gateway.backends.registry import BackendRegistry
from gateway.metrics import GatewayMetrics
from gateway.openai.request import ParsedRequest
from gateway.path.context import Plan, RequestContext
from gateway.path.exchange.lease import Lease
from gateway.policy import load_policy_text

POLICY = load_policy_text(
    """
backends:
  - {name: a, url: "http://127.0.0.1:1", model: m, pool: small}
models:
  fast: {pool: small}
"""
)


def _ctx() -> RequestContext:
    body = {"model": "fast", "messages": [{"role": "user", "content": "hi there"}]}
    return RequestContext("r", 0.0, ParsedRequest("chat", "fast", True, body), POLICY, {})


def _errors(registry: CollectorRegistry) -> float:
    """The predictions whose error was charted (both directions)."""
    name = "gateway_ttft_prediction_error_seconds_count"
    return sum(registry.get_sample_value(name, {"pool": "small", "direction": d}) or 0.0
               for d in ("over", "under"))  # fmt: skip


@pytest.mark.parametrize(
    ("seen", "charted"),
    [
        (0, 0.0),  # the prior: its error is not the predictor's
        (2, 0.0),  # fewer first tokens than the predictor needs
        (3, 1.0),  # supported: its error is charted
    ],
)
def test_a_first_token_charts_the_error_of_a_supported_prediction_only(
    seen: int, charted: float
) -> None:
    registry = CollectorRegistry()
    metrics = GatewayMetrics(registry)
    backends = BackendRegistry()
    backends.reconcile(POLICY)
    backend = backends.get("a")
    assert backend is not None
    now, ctx = [0.0], _ctx()

    def clock() -> float:
        return now[0]

    plan = Plan(POLICY.pools["small"], "model:fast")
    for _ in range(seen):  # first tokens of the same request, 40 ms each
        lease = Lease(ctx, plan, backend, metrics, clock)
        now[0] += 0.04
        lease.first_token()
    assert _errors(registry) == max(0, seen - 3)  # none of these was supported when it was made
    lease = Lease(ctx, plan, backend, metrics, clock)
    now[0] += 0.04
    lease.first_token()
    assert _errors(registry) == charted
    assert lease.supported is (charted == 1.0)  # what its access-log line says
    assert backend.ttft_model.observations == seen + 1  # the predictor learns from every one
