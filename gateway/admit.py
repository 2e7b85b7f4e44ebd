"""The admission stage of the request path: decide, maybe degrade, then wait for a slot.

A request planned onto a pool is checked by that pool's admission (which may refuse it at
once, or say "degrade" under the overload ladder when the gateway chose the pool itself);
a degraded request is checked again by the pool it moves to, and never moved twice. Then it
waits for a slot there. A client leaving while it waits is counted as a ``queued``
cancellation.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace

from gateway.admission.controller import Permit, PoolAdmission
from gateway.pipeline import Plan, RequestContext
from gateway.request_facts import admission_request
from gateway.runtime import Gateway


@dataclass(frozen=True, slots=True)
class Admitted:
    plan: Plan
    permit: Permit
    degraded: bool


async def admit(gateway: Gateway, ctx: RequestContext, plan: Plan) -> Admitted:
    auto = ctx.policy.models[ctx.request.model].auto
    pool = _admission(gateway, plan)
    request = admission_request(ctx, pool.settings.long_prompt_tokens, degradable=auto)
    decision = pool.check(request)
    degraded = decision.degrade_to is not None
    if decision.degrade_to is not None:
        target = ctx.policy.pools[decision.degrade_to]
        plan = replace(plan, pool=target, reason=f"{plan.reason};degraded:{target.name}")
        pool = _admission(gateway, plan)
        request = admission_request(ctx, pool.settings.long_prompt_tokens, degradable=False)
        pool.check(request)
    try:
        permit = await pool.acquire(request)
    except asyncio.CancelledError:
        gateway.metrics.cancellations.labels("queued").inc()
        raise
    gateway.metrics.admitted.labels(plan.pool.name).inc()
    return Admitted(plan, permit, degraded)


def _admission(gateway: Gateway, plan: Plan) -> PoolAdmission:
    return gateway.admissions[plan.pool.name]
