"""The gateway gives every pool's admission its lease gate, also to pools a reload rebuilds."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from gateway.metrics import GatewayMetrics
from gateway.runtime.parts import Gateway
from tests.unit.gateway.helpers import MINIMAL_POLICY, policy


class Gates:
    def __init__(self) -> None:
        self.asked: list[str] = []

    def __call__(self, pool: str) -> object:
        self.asked.append(pool)
        return f"gate:{pool}"


def test_gates_reach_current_and_rebuilt_admissions() -> None:
    gateway = Gateway.create(
        policy(MINIMAL_POLICY),
        path=None,
        metrics=GatewayMetrics(CollectorRegistry()),
        clock=lambda: 0.0,
    )
    assert gateway.admissions["small"].pump.leases is None  # cluster admission not started
    gates = Gates()
    gateway.attach_lease_gates(gates)  # type: ignore[arg-type]
    assert gateway.admissions["small"].pump.leases == "gate:small"
    changed = MINIMAL_POLICY + "pools:\n  small: {admission: {max_queue: 7}}\n"
    gateway.holder.swap(policy(changed))
    rebuilt = gateway.admissions["small"]
    assert rebuilt.settings.max_queue == 7
    assert rebuilt.pump.leases == "gate:small"
    assert gates.asked == ["small", "small"]
