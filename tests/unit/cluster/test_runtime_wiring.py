"""The gateway gives every pool's admission its lease gate, also to pools a reload rebuilds,
where the pool's limit can bind (an uncapped static limit would grant every lease)."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from gateway.metrics import GatewayMetrics
from gateway.runtime.parts import Gateway
from tests.unit.gateway.helpers import MINIMAL_POLICY, policy

CAPPED = MINIMAL_POLICY.replace("pool: small\n", "pool: small\n    max_inflight: 4\n", 1)


class Gates:
    def __init__(self) -> None:
        self.asked: list[str] = []

    def __call__(self, pool: str) -> object:
        self.asked.append(pool)
        return f"gate:{pool}"


def _gateway(text: str) -> Gateway:
    return Gateway.create(
        policy(text),
        path=None,
        metrics=GatewayMetrics(CollectorRegistry()),
        clock=lambda: 0.0,
    )


def test_gates_reach_current_and_rebuilt_admissions() -> None:
    gateway = _gateway(CAPPED)
    assert gateway.admissions["small"].pump.leases is None  # cluster admission not started
    gates = Gates()
    gateway.attach_lease_gates(gates)  # type: ignore[arg-type]
    assert gateway.admissions["small"].pump.leases == "gate:small"
    changed = CAPPED + "pools:\n  small: {admission: {max_queue: 7}}\n"
    gateway.holder.swap(policy(changed))
    rebuilt = gateway.admissions["small"]
    assert rebuilt.settings.max_queue == 7
    assert rebuilt.pump.leases == "gate:small"
    assert gates.asked == ["small", "small"]


# policy -> whether the pool asks the cluster for leases
LIMIT = MINIMAL_POLICY + "pools:\n  small: {admission: {limit: %s}}\n"
BINDS: dict[str, tuple[str, bool]] = {
    "a backend's max_inflight": (CAPPED, True),
    "no cap anywhere: every lease would be granted": (MINIMAL_POLICY, False),
    "max_limit": (LIMIT % "{max_limit: 9}", True),
    "an adaptive limit": (LIMIT % "{kind: aimd}", True),
}


@pytest.mark.parametrize(("text", "leased"), BINDS.values(), ids=BINDS.keys())
def test_only_a_limit_that_can_bind_asks_for_leases(text: str, leased: bool) -> None:
    gateway = _gateway(text)
    gateway.attach_lease_gates(Gates())  # type: ignore[arg-type]
    assert (gateway.admissions["small"].pump.leases is not None) is leased
