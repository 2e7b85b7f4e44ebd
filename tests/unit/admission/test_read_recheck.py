"""A read of an engine's metrics re-judges the pool's waiters (issue 31, the cold burst).

A burst onto engines still probed waits in the gateway unjudged (a probe is no limit); the
read that shows a batch full makes the waits evidence, and the waiters that cannot be
served in time are refused then, not at the next slot's release seconds later."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from gateway.admission.decision import PROBE
from gateway.admission.queue import Ticket
from gateway.metrics import GatewayMetrics
from gateway.runtime.parts import Gateway
from tests.unit.gateway.helpers import MINIMAL_POLICY, policy


@pytest.mark.parametrize(("waiters", "rechecks"), [(0, 0), (1, 1)], ids=["none", "one"])
def test_a_read_rechecks_the_waiters(waiters: int, rechecks: int) -> None:
    gateway = Gateway.create(
        policy(MINIMAL_POLICY.replace("pool: small\n", "pool: small\n    engine: vllm\n", 1)),
        path=None,
        metrics=GatewayMetrics(CollectorRegistry()),
        clock=lambda: 0.0,
    )
    admission = gateway.admissions["small"]
    for _ in range(waiters):
        admission.queue.push(Ticket(PROBE.priority, PROBE.lane, 1.0, None, 0.0))
    seen: list[int] = []
    admission.recheck = lambda: seen.append(1)  # type: ignore[method-assign]
    admission.dispatch = lambda: None  # type: ignore[method-assign]
    state = gateway.backends.get("small-1")
    assert state is not None
    gateway.on_load_read(state)
    assert len(seen) == rechecks
