"""A one-backend pool's admission on a manual clock, for the admission tests."""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry

from gateway.admission.controller import PoolAdmission
from gateway.admission.fleet import FleetView
from gateway.admission.host_slots import ALONE, HostSlots
from gateway.metrics import GatewayMetrics
from gateway.policy import load_policy_text


class Clock:
    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def pool_admission(
    *,
    slots: int,
    clock: Clock,
    admission: str = "{}",
    backend_s: float | None = None,
    engine_slots: Callable[[], int | None] = lambda: None,
    fleet: FleetView | None = None,
    host: HostSlots = ALONE,
) -> PoolAdmission:
    """``slots`` slots (the backend's max_inflight); ``backend_s``: the replica's predicted
    TTFT (None: no prediction, as with no routable replica); ``engine_slots``: what the
    replicas were learned to run at once, read at each decision (None: not known); ``fleet``:
    every reading of the replicas instead (``backend_s`` and ``engine_slots`` then unused);
    ``host``: the host's other workers (``serve --workers``)."""
    policy = load_policy_text(
        f"""
backends:
  - {{name: b0, url: "http://127.0.0.1:1", model: m, pool: p, max_inflight: {slots}}}
models:
  fast: {{pool: p}}
pools:
  p: {{admission: {admission}}}
"""
    )
    return PoolAdmission(
        policy.pools["p"],
        clock=clock,
        metrics=GatewayMetrics(CollectorRegistry()),
        fleet=fleet or FleetView(ttft=lambda tokens: (backend_s or 0.0, True), slots=engine_slots),
        host=host,
    )
