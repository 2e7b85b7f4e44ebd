"""Pick a replica of a pool: filters, then round-robin.

Algorithm: drop replicas that are unhealthy, ejected by their breaker or already tried by this
request, then those at their ``max_inflight``; among the
rest take the next one in round-robin order (a per-pool cursor, so load spreads evenly even
when some replicas are filtered out). The outcome is a value: a chosen backend, or the reason
none could be chosen.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from enum import StrEnum

from gateway.backends.state import BackendState


class NoBackend(StrEnum):
    NONE_HEALTHY = "none_healthy"
    ALL_SATURATED = "all_saturated"


@dataclass(frozen=True, slots=True)
class Pick:
    backend: BackendState | None
    reason: NoBackend | None = None


class RoundRobinPicker:
    """Round-robin over eligible replicas, with one cursor per pool."""

    def __init__(self) -> None:
        self._cursor: dict[str, int] = {}

    def pick(
        self,
        pool: str,
        replicas: Sequence[BackendState],
        exclude: Collection[str] = (),
    ) -> Pick:
        """Next eligible replica; ``exclude`` names replicas this request already tried."""
        healthy = [r for r in replicas if r.routable and r.name not in exclude]
        if not healthy:
            return Pick(None, NoBackend.NONE_HEALTHY)
        free = [r for r in healthy if r.has_capacity]
        if not free:
            return Pick(None, NoBackend.ALL_SATURATED)
        cursor = self._cursor.get(pool, 0)
        self._cursor[pool] = cursor + 1
        return Pick(free[cursor % len(free)])
