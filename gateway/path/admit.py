"""The admission stage of the request path: decide, maybe degrade, then wait for a slot.

A request planned onto a pool is checked by that pool's admission (which may refuse it at
once, or say "degrade" under the overload ladder when the gateway chose the pool itself and
the request fits the smaller pool's context window); a degraded request is checked again by
the pool it moves to, and never moved twice. Then it waits for a slot there. A client
leaving while it waits is counted as a ``queued`` cancellation.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, replace

from gateway.admission.controller import AdmissionRequest, Permit, PoolAdmission
from gateway.admission.queue import Lane
from gateway.classify.messages import DEFAULT_OUTPUT_TOKENS, prompt_chars, requested_max_tokens
from gateway.metrics import GatewayMetrics
from gateway.path.context import Plan, RequestContext
from gateway.path.context_window import fits_pool


@dataclass(frozen=True, slots=True)
class Admitted:
    plan: Plan
    permit: Permit
    degraded: bool


async def admit(
    admissions: Mapping[str, PoolAdmission],
    metrics: GatewayMetrics,
    ctx: RequestContext,
    plan: Plan,
) -> Admitted:
    pool = admissions[plan.pool.name]
    degradable = may_degrade(ctx, plan, pool.settings.degrade_to)
    request = admission_request(ctx, pool.settings.long_prompt_tokens, degradable=degradable)
    decision = pool.check(request)
    degraded = decision.degrade_to is not None
    if decision.degrade_to is not None:
        target = ctx.policy.pools[decision.degrade_to]
        plan = replace(plan, pool=target, reason=f"{plan.reason};degraded:{target.name}")
        pool = admissions[plan.pool.name]
        request = admission_request(ctx, pool.settings.long_prompt_tokens, degradable=False)
        pool.check(request)
    try:
        permit = await pool.acquire(request)
    except asyncio.CancelledError:
        metrics.cancellations.labels("queued").inc()
        raise
    metrics.admitted.labels(plan.pool.name).inc()
    return Admitted(plan, permit, degraded)


def may_degrade(ctx: RequestContext, plan: Plan, smaller: str | None) -> bool:
    """Whether the overload ladder may move this request to the ``smaller`` pool: only a
    request the gateway routed itself (``route: auto``), and only into a pool whose context
    window it fits."""
    if not ctx.policy.models[ctx.request.model].auto:
        return False
    return smaller is None or fits_pool(ctx, plan, ctx.policy.pools[smaller])


def admission_request(
    ctx: RequestContext, long_prompt_tokens: int, degradable: bool
) -> AdmissionRequest:
    """What the pool's admission weighs: priority, deadline, lane by prompt size (about four
    characters a token), and cost (prompt plus ``max_tokens``, or a default)."""
    body = ctx.request.body
    prompt_tokens = prompt_chars(body) / 4
    output = requested_max_tokens(body) or DEFAULT_OUTPUT_TOKENS
    return AdmissionRequest(
        priority=ctx.priority,
        lane=Lane.LONG if prompt_tokens >= long_prompt_tokens else Lane.SHORT,
        cost=prompt_tokens + float(output),
        deadline=ctx.deadline,
        degradable=degradable,
        prompt_tokens=prompt_tokens,
    )
