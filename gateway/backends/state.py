"""Live state of each backend replica, kept across policy reloads.

A backend keeps its state (in-flight count, health) through a reload as long as its name and
URL are unchanged; anything else is a new backend and starts fresh.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from gateway.policy.compile import BackendSpec, CompiledPolicy


class Health(StrEnum):
    UNKNOWN = "unknown"
    HEALTHY = "healthy"
    UNHEALTHY = "unhealthy"


@dataclass(eq=False)
class BackendState:
    spec: BackendSpec
    inflight: int = 0
    health: Health = Health.UNKNOWN
    failures: int = 0
    successes: int = 0

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def routable(self) -> bool:
        # Unknown counts as routable so the first requests need not wait for the first probe.
        return self.health is not Health.UNHEALTHY

    @property
    def has_capacity(self) -> bool:
        return self.inflight < self.spec.max_inflight


class BackendRegistry:
    """The states of the backends named by the active policy."""

    def __init__(self) -> None:
        self._states: dict[str, BackendState] = {}

    def reconcile(self, policy: CompiledPolicy) -> None:
        fresh: dict[str, BackendState] = {}
        for spec in policy.backends:
            old = self._states.get(spec.name)
            if old is not None and old.spec.url == spec.url:
                old.spec = spec
                fresh[spec.name] = old
            else:
                fresh[spec.name] = BackendState(spec)
        self._states = fresh

    def get(self, name: str) -> BackendState | None:
        return self._states.get(name)

    def all(self) -> Iterable[BackendState]:
        return tuple(self._states.values())

    def in_pool(self, policy: CompiledPolicy, pool: str) -> list[BackendState]:
        return [
            state
            for spec in policy.pools[pool].backends
            if (state := self._states.get(spec.name)) is not None
        ]

    def pool_ready(self, policy: CompiledPolicy) -> Mapping[str, bool]:
        return {
            pool: any(s.health is Health.HEALTHY for s in self.in_pool(policy, pool))
            for pool in policy.pools
        }
