"""The request path's facts and its pure decision stages.

Fixed order: parse -> plan (``planning.py``) -> admit -> pick (replica) -> proxy ->
on_complete.
Stages are plain functions of (context, state, policy) that return a value or raise a
``GatewayError``; I/O stays in the proxy.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from gateway.admission.queue import Priority
from gateway.backends.state import BackendRegistry
from gateway.embedding import Vectors
from gateway.errors import ServiceUnavailable
from gateway.openai_api import ParsedRequest
from gateway.policy.compile import CompiledPolicy, PoolSpec
from gateway.scheduling.picker import NoBackend
from gateway.scheduling.scheduler import Choice, RouteFacts, Scheduler
from gateway.tracing.marks import StageMarks


@dataclass(frozen=True, slots=True)
class RequestContext:
    """Facts about one request, fixed at arrival."""

    request_id: str
    arrival: float
    request: ParsedRequest
    policy: CompiledPolicy
    headers: Mapping[str, str]
    priority: Priority = Priority.STANDARD  # from x-gateway-priority
    marks: StageMarks = field(default_factory=StageMarks)  # when each stage ended
    tenant: str | None = None  # from the gateway API key, when the policy has tenants
    cache: str | None = None  # the cache stage's result (x-gateway-cache)
    difficulty_vote: float | None = None  # kNN vote over exemplars (classify.knn), if on
    query_vector: Vectors | None = None  # the question's embedding, for the learned model


@dataclass(frozen=True, slots=True)
class Plan:
    pool: PoolSpec
    reason: str
    length: str = "unknown"  # the prompt's length class, a metrics label
    prompt_tokens: int | None = None  # the plan stage's estimate, when it classified


def pick_backend(
    ctx: RequestContext,
    plan: Plan,
    registry: BackendRegistry,
    scheduler: Scheduler,
    facts: RouteFacts,
    exclude: Collection[str] = (),
) -> Choice:
    """Choose the replica at dispatch time, from the latest backend state."""
    replicas = registry.in_pool(ctx.policy, plan.pool.name)
    choice = scheduler.choose(plan.pool.name, replicas, facts, exclude)
    pick = choice.pick
    if pick.backend is not None:
        return choice
    if pick.reason is NoBackend.NONE_HEALTHY:
        raise ServiceUnavailable(
            f"No healthy backend in pool '{plan.pool.name}'.",
            code="no_healthy_backend",
            retry_after_s=5,
            retryable=True,
        )
    raise ServiceUnavailable(
        f"Every backend in pool '{plan.pool.name}' is at its max_inflight.",
        code="pool_saturated",
        retry_after_s=1,
        retryable=True,
    )
