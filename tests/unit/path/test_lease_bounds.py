"""At its first token, a stream that asked for at most ``max_tokens`` tells its pool's
admission when it will be done at the latest, at its backend's recent pace."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from gateway.admission.controller import PoolAdmission
from gateway.admission.decision import AdmissionRequest
from gateway.admission.queue import Lane, Priority
from gateway.backends.state import BackendState
from gateway.metrics import GatewayMetrics
from gateway.path.context import Plan, RequestContext
from gateway.path.lease import Lease, Outcome
from gateway.policy import load_policy_text
from gateway.request import ParsedRequest
from tests.unit.admission.pools import Clock

POLICY = load_policy_text(
    """
backends:
  - {name: b0, url: "http://127.0.0.1:1", model: m, pool: p, max_inflight: 1}
models:
  fast: {pool: p}
"""
)


@pytest.mark.parametrize(
    ("max_tokens", "streams_seen", "release_s"),
    [
        (51, 8, 1.0),  # 50 tokens after the first at 20 ms: back within 1 s
        (None, 8, 10.0),  # no budget: the sampled holds (10 s) decide
        (51, 7, 10.0),  # too few streams to know the pace
    ],
)
async def test_a_stream_bounds_its_slot_by_its_budget(
    max_tokens: int | None, streams_seen: int, release_s: float
) -> None:
    clock = Clock(1000.0)
    metrics = GatewayMetrics(CollectorRegistry())
    admission = PoolAdmission(
        POLICY.pools["p"], clock=clock, metrics=metrics, backend_load=lambda: (0.0, 0.0)
    )
    admission.hold.on_release(10.0)
    body: dict[str, object] = {"model": "fast", "messages": [{"role": "user", "content": "hi"}]}
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    ctx = RequestContext("r", clock.now, ParsedRequest("chat", "fast", True, body), POLICY, {})
    backend = BackendState(POLICY.backends[0])
    for _ in range(streams_seen):
        backend.decode_pace.observe(0.02)
    wanted = AdmissionRequest(Priority.STANDARD, Lane.SHORT, 10.0, None, False, 1.0)
    permit = await admission.acquire(wanted)
    lease = Lease(ctx, Plan(POLICY.pools["p"], "test"), backend, metrics, clock, permit)
    lease.first_token()
    assert admission.hold.expected_waits(1, 1, clock.now) == pytest.approx([release_s], rel=0.05)
    lease.finish(Outcome(200))
