"""The first and last stages of replica choice: filters, then the best total score.

Filters drop replicas that are unhealthy, ejected by their breaker or already tried by this
request (``NONE_HEALTHY`` when none is left), then those at their ``max_inflight``
(``ALL_SATURATED``). The picker takes the highest weighted total; candidates within
``TIE`` of the best are tied and one of them is drawn with the injected RNG, so equal
replicas share load and a seeded run is reproducible.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from enum import StrEnum

from gateway.backends.state import BackendState

TIE = 1e-9


class NoBackend(StrEnum):
    NONE_HEALTHY = "none_healthy"
    ALL_SATURATED = "all_saturated"


@dataclass(frozen=True, slots=True)
class Pick:
    backend: BackendState | None
    reason: NoBackend | None = None


def eligible(
    replicas: Sequence[BackendState], exclude: Collection[str] = ()
) -> list[BackendState] | NoBackend:
    healthy = [r for r in replicas if r.routable and r.name not in exclude]
    if not healthy:
        return NoBackend.NONE_HEALTHY
    free = [r for r in healthy if r.has_capacity]
    return free or NoBackend.ALL_SATURATED


def best(totals: Sequence[float], rng: random.Random) -> int:
    """Index of the highest total; ties drawn with ``rng`` (only when there is a tie)."""
    top = max(totals)
    tied = [i for i, t in enumerate(totals) if top - t <= TIE]
    return tied[0] if len(tied) == 1 else rng.choice(tied)
