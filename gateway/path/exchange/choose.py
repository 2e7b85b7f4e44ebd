"""Choose the replica for an attempt, at dispatch time, from the latest backend state; when
none can take it, say why with an honest Retry-After (no healthy replica: until one may be
back; all at their limit: until the soonest frees a slot)."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from gateway.admission.retry_after import retry_after_s
from gateway.backends.registry import BackendRegistry
from gateway.backends.state import BackendState
from gateway.errors import ServiceUnavailable
from gateway.path.context import Plan, RequestContext
from gateway.scheduling.picker import NoBackend
from gateway.scheduling.scheduler import Choice, RouteFacts, Scheduler


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
