"""What the gateway tells the hedge decision of a pool (``Gateway.hedging_state``): how long
since the pool was last saturated, and whether anything waits there, on an injected clock."""

from __future__ import annotations

import math

import pytest
from prometheus_client import CollectorRegistry

from gateway.admission.decision import PROBE
from gateway.admission.queue import Ticket
from gateway.admission.saturation import PoolState, State, Waiting
from gateway.metrics import GatewayMetrics
from gateway.runtime.parts import Gateway
from tests.unit.gateway.helpers import MINIMAL_POLICY, policy

# id -> (when the detector last read saturated (None: never), the state now, queued, now,
#        the answer)
CASES: dict[str, tuple[float | None, State, int, float, tuple[float, bool]]] = {
    "never saturated, nothing waits": (None, State.NOMINAL, 0, 10.0, (math.inf, False)),
    "saturated now": (None, State.SATURATED, 1, 10.0, (0.0, True)),
    "overloaded now": (None, State.OVERLOADED, 1, 10.0, (0.0, True)),
    "nominal, 9 s after a burst": (1.0, State.NOMINAL, 0, 10.0, (9.0, False)),
    "nominal, a queue left from it": (1.0, State.NOMINAL, 2, 31.0, (30.0, True)),
}  # fmt: skip


@pytest.mark.parametrize(("burst_at", "state", "queued", "now", "want"), CASES.values(), ids=CASES)
def test_hedging_state(
    burst_at: float | None, state: State, queued: int, now: float, want: tuple[float, bool]
) -> None:
    clock = [0.0]
    gateway = Gateway.create(
        policy(MINIMAL_POLICY),
        path=None,
        metrics=GatewayMetrics(CollectorRegistry()),
        clock=lambda: clock[0],
    )
    admission = gateway.admissions["small"]
    if burst_at is not None:  # arrivals with nothing draining, and a queue: saturated then
        for i in range(20):
            admission.saturation.arrived(burst_at * i / 20)
        read = admission.saturation.state(burst_at, Waiting(5, 0.0), lambda: None, None)
        assert read.saturated
    for _ in range(queued):
        admission.queue.push(Ticket(PROBE.priority, PROBE.lane, 1.0, None, 0.0))
    admission.state = lambda: PoolState(state, "", 0.0, 0.0)  # type: ignore[method-assign]
    clock[0] = now
    assert gateway.hedging_state("small") == want
    assert gateway.hedging_state("no such pool") == (math.inf, False)
