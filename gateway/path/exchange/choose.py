"""Choose the replica for an attempt, at dispatch time, from the latest backend state; when
none can take it, say why with an honest Retry-After (no healthy replica: until one may be
back; all at their limit: until the soonest frees a slot).

``in_time``: a request that admission gave a slot can still find every replica at its cap (a
hedge holds a replica's slot that admission does not count; a replica's cap fell with a read
since; a sibling worker's request got there first). Its slot is not a refusal: it looks
again every ``SLOT_POLL_S`` until its give-up time. A poll, not a wake-up: replicas free
slots in this worker's leases and in siblings' processes alike, and the case is rare."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import TypeVar

from gateway.admission.retry_after import retry_after_s
from gateway.backends.registry import BackendRegistry
from gateway.backends.state import BackendState
from gateway.errors import ServiceUnavailable
from gateway.path.context import Plan, RequestContext
from gateway.scheduling.picker import NoBackend
from gateway.scheduling.scheduler import Choice, RouteFacts, Scheduler

SLOT_POLL_S = 0.01  # how often a request with an admission slot looks for a replica's
T = TypeVar("T")


def pick_backend(
    ctx: RequestContext,
    plan: Plan,
    registry: BackendRegistry,
    scheduler: Scheduler,
    facts: RouteFacts,
    exclude: Collection[str] = (),
) -> Choice:
    """Choose the replica at dispatch time, from the latest backend state."""
    endpoint = ctx.request.endpoint
    replicas = [s for s in registry.in_pool(ctx.policy, plan.pool.name) if s.spec.serves(endpoint)]
    choice = scheduler.choose(plan.pool.name, replicas, facts, exclude)
    pick = choice.pick
    if pick.backend is not None:
        return choice
    if pick.reason is NoBackend.NONE_HEALTHY:
        raise ServiceUnavailable(
            f"No healthy backend in pool '{plan.pool.name}'.",
            code="no_healthy_backend",
            retry_after_s=_until_back(replicas, ctx.policy.source.health.interval_s, registry),
            retryable=True,
        )
    # Each replica frees a slot about when the work ahead of a new request there is done.
    soonest = min((s.predict_ttft(0.0) for s in replicas), default=1.0)
    raise ServiceUnavailable(
        f"Every backend in pool '{plan.pool.name}' is at its max_inflight.",
        code="pool_saturated",
        retry_after_s=retry_after_s(soonest),
        retryable=True,
    )


def _until_back(
    replicas: Sequence[BackendState], probe_s: float, registry: BackendRegistry
) -> float:
    """Seconds until a replica may serve again: the soonest end of an ejection, or the next
    health probe for a replica that failed its probes."""
    now = registry.now()
    ends = [until - now for s in replicas if (until := s.breaker.ejected_until) is not None]
    return retry_after_s(min([*ends, probe_s]))


async def in_time(
    lease: Callable[[], T],
    until: Callable[[], float | None],
    clock: Callable[[], float],
    sleep: Callable[[float], Awaitable[None]],
) -> T:
    """``lease()``, again every ``SLOT_POLL_S`` while it finds every replica at its cap
    (``pool_saturated``) and ``until()`` (asked only then; None: no wait) is more than a poll
    away; else its error."""
    limit: float | None = None
    while True:
        try:
            return lease()
        except ServiceUnavailable as exc:
            if exc.code != "pool_saturated":
                raise
            limit = until() if limit is None else limit
            if limit is None or clock() + SLOT_POLL_S > limit:
                raise
        await sleep(SLOT_POLL_S)
