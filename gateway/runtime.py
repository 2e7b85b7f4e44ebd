"""The gateway's live parts, built once per app and shared by its endpoints."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gateway.backends.state import BackendRegistry, BackendState, Health
from gateway.metrics import GatewayMetrics
from gateway.policy.compile import CompiledPolicy
from gateway.policy.reload import PolicyHolder, ReloadResult
from gateway.proxy import Proxy
from gateway.scheduling.picker import RoundRobinPicker


@dataclass
class Gateway:
    holder: PolicyHolder
    backends: BackendRegistry
    metrics: GatewayMetrics
    clock: Callable[[], float]
    picker: RoundRobinPicker = field(default_factory=RoundRobinPicker)
    proxy: Proxy | None = None
    started_at: int = field(default_factory=lambda: int(time.time()))

    @classmethod
    def create(
        cls,
        policy: CompiledPolicy,
        *,
        path: Path | None,
        metrics: GatewayMetrics,
        clock: Callable[[], float],
    ) -> Gateway:
        gateway = cls(PolicyHolder(policy), BackendRegistry(), metrics, clock)
        gateway.holder = PolicyHolder(
            policy, path=path, on_swap=gateway.on_swap, on_result=gateway.on_reload
        )
        gateway.on_swap(policy)
        return gateway

    @property
    def policy(self) -> CompiledPolicy:
        return self.holder.current

    def require_proxy(self) -> Proxy:
        if self.proxy is None:
            raise RuntimeError("the gateway's lifespan has not started")
        return self.proxy

    def on_swap(self, policy: CompiledPolicy) -> None:
        """Called with the new policy just before it becomes active."""
        self.backends.reconcile(policy)
        self.metrics.policy_info.clear()
        self.metrics.policy_info.labels(policy.digest[:12]).set(1)
        for state in self.backends.all():
            self.on_health_change(state)

    def on_reload(self, result: ReloadResult) -> None:
        self.metrics.policy_reloads.labels("success" if result.ok else "failure").inc()

    def on_health_change(self, state: BackendState) -> None:
        gauge = self.metrics.backend_healthy.labels(state.name, state.spec.pool)
        gauge.set(1 if state.health is Health.HEALTHY else 0)

    def pool_states(self) -> list[BackendState]:
        return list(self.backends.all())
