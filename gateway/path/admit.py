"""The admission stage: admit the planned request, degrade it, or refuse it, then wait for a
slot.

The planned pool's admission predicts the request's time to first token and decides
(``admission/controller.py``). A request the gateway routed itself (``route: auto``) may move
to the smaller pool, once and only into a pool whose context window it fits: when the
overload ladder says ``degrade``, or when the planned pool cannot meet its TTFT objective and
its difficulty lies within ``degrade_margin`` of the boundary that chose the planned pool (a
near call: the smaller model likely answers it too), provided the smaller pool can meet it.
Otherwise a refusal is a 503 with ``Retry-After``. Then it waits for a slot; a client leaving
while it waits is counted as a ``queued`` cancellation.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from gateway.admission.controller import PoolAdmission
from gateway.admission.decision import AdmissionRequest, Decision
from gateway.admission.permit import Permit
from gateway.admission.queue import Lane
from gateway.errors import GatewayError
from gateway.metrics import GatewayMetrics
from gateway.openai.messages import expected_output_tokens, prompt_chars
from gateway.openai.request import GENERATING
from gateway.path.context import Plan, RequestContext, evolve, fits_pool
from gateway.path.flow import Flow, Services

# (pool, characters of a prompt) -> the prompt tokens the pool's backends count for them
# (``Services.prompt_tokens``, learned from their ``usage``).
TokenCounter = Callable[[str, int], float]


@dataclass(frozen=True, slots=True)
class Admitted:
    plan: Plan
    permit: Permit
    degraded: bool


async def admit_stage(flow: Flow, services: Services) -> Flow:
    """The flow with its slot (``permit``) and its plan, moved if it was degraded."""
    admitted = await admit(
        services.admissions, services.metrics, flow.ctx, flow.planned(), services.prompt_tokens
    )
    flow.headers["x-gateway-queue-ms"] = str(round(admitted.permit.queued_s * 1000))
    return evolve(flow, plan=admitted.plan, permit=admitted.permit, degraded=admitted.degraded)


async def admit(
    admissions: Mapping[str, PoolAdmission],
    metrics: GatewayMetrics,
    ctx: RequestContext,
    plan: Plan,
    count: TokenCounter,
) -> Admitted:
    pool = admissions[plan.pool.name]
    split = ctx.policy.auto_split
    routed_small = split.small if split is not None else ctx.policy.default_pool
    smaller = pool.settings.degrade_to or routed_small
    degradable = smaller != plan.pool.name and may_degrade(ctx, plan, smaller)
    request = admission_request(ctx, pool, degradable, count)
    pool.arrived(request.prompt_tokens)
    decision = pool.check(request)
    degraded = False
    if degradable and _should_degrade(plan, pool, decision):
        target = admissions[smaller]
        moved = admission_request(ctx, target, False, count)
        verdict = target.check(moved)
        if verdict.refuse is None or decision.degrade_to is not None:
            reason = f"{plan.reason};degraded:{smaller}"
            plan = replace(plan, pool=ctx.policy.pools[smaller], reason=reason)
            pool, request, decision, degraded = target, moved, verdict, True
    try:
        if decision.refuse is not None:
            raise pool.refusal(request, decision)
        permit = await pool.acquire(request, decision)
    except asyncio.CancelledError:
        metrics.cancellations.labels("queued").inc()
        raise
    except GatewayError as exc:
        exc.headers.setdefault("x-gateway-pool", plan.pool.name)  # which pool refused it
        raise
    metrics.admitted.labels(plan.pool.name).inc()
    metrics.ttft_predicted.labels(plan.pool.name).observe(decision.prediction.ttft_s)
    return Admitted(plan, permit, degraded)


def _should_degrade(plan: Plan, pool: PoolAdmission, decision: Decision) -> bool:
    """The ladder says degrade, or the objective cannot be met and the routing was a near call."""
    if decision.degrade_to is not None:
        return True
    margin = plan.difficulty_margin
    return decision.unmeetable and margin is not None and margin <= pool.settings.degrade_margin


def may_degrade(ctx: RequestContext, plan: Plan, smaller: str | None) -> bool:
    """Whether this request may move to the ``smaller`` pool: only a request the gateway
    routed itself (``route: auto``), and only into a pool whose context window it fits."""
    if not ctx.policy.models[ctx.request.model].auto:
        return False
    return smaller is None or fits_pool(ctx, plan, ctx.policy.pools[smaller])


def admission_request(
    ctx: RequestContext, admission: PoolAdmission, degradable: bool, count: TokenCounter
) -> AdmissionRequest:
    """What the pool's admission weighs: priority, deadline, lane by prompt size (in tokens
    as the pool's backends count them: ``count``), and cost (prompt plus ``max_tokens``, or a
    default for a request that generates)."""
    body = ctx.request.body
    prompt_tokens = count(admission.pool.name, prompt_chars(body))
    long_from = admission.settings.long_prompt_tokens
    output = expected_output_tokens(body, generates=ctx.request.endpoint in GENERATING)
    return AdmissionRequest(
        priority=ctx.priority,
        lane=Lane.LONG if prompt_tokens >= long_from else Lane.SHORT,
        cost=prompt_tokens + float(output),
        deadline=ctx.deadline,
        degradable=degradable,
        prompt_tokens=prompt_tokens,
        arrival=ctx.arrival,
    )
