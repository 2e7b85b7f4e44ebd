"""The backend's answer to a semantic hit's request, for sampled verification.

``cache/verification.py`` draws a share of semantic hits and, in the background, asks the
backend the same request through ``backend_answer``: the way a miss would go (plan, compress,
the pool's admission, the dispatcher's replica choice, retries, breaker and leases), with the
request's own body and context (its tenant, its headers as the path sees them; the backend
gets its own key, never the client's, as for any request), but non-streaming and sheddable.
It never waits for capacity: when the pool has no free slot, or its admission would refuse
or degrade the request, it is skipped, so verification adds no load to a busy pool and no
wait for anyone. An answer from a fallback pool is not compared (it is not the planned
pool's). Its backend calls show in ``gateway_requests_total`` with ``cache="verify"``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gateway.admission.queue import Priority
from gateway.cache.verification.sampling import NoAnswer
from gateway.errors import GatewayError
from gateway.path.admit import admission_request
from gateway.path.compress import compress_stage
from gateway.path.context import RequestContext
from gateway.path.exchange.events import json_object
from gateway.path.plan import plan_pool
from gateway.runtime.own_requests import open_with, read_whole
from gateway.runtime.parts import Gateway
from gateway.tracing.marks import StageMarks

VERIFY = "verify"  # the cache label of its backend calls


async def backend_answer(gateway: Gateway, ctx: RequestContext) -> dict[str, Any]:
    """The backend's whole answer to ``ctx``'s request; raises ``NoAnswer``."""
    try:
        return await _ask(gateway, _verification_of(gateway, ctx))
    except GatewayError as exc:
        raise NoAnswer("failed", exc.message) from None


def _verification_of(gateway: Gateway, ctx: RequestContext) -> RequestContext:
    request = ctx.request
    body = {k: v for k, v in request.body.items() if k != "stream_options"}
    body["stream"] = False
    return replace(
        ctx,
        request_id=f"{ctx.request_id}-verify",
        arrival=gateway.clock(),
        request=replace(request, stream=False, body=body),
        priority=Priority.SHEDDABLE,
        marks=StageMarks(),
        cache=VERIFY,
        deadline=None,
        embed_s=0.0,
    )


async def _ask(gateway: Gateway, ctx: RequestContext) -> dict[str, Any]:
    dispatcher = gateway.dispatcher
    if dispatcher is None:
        raise NoAnswer("skipped", "the gateway is not serving")
    ctx, plan = compress_stage(ctx, plan_pool(ctx), gateway.summaries, gateway.metrics, {})
    admission = gateway.admissions[plan.pool.name]
    wanted = admission_request(ctx, admission, False, gateway.prompt_tokens)
    decision = admission.check(wanted)  # its prediction says whether a slot is free now
    if decision.prediction.wait_s > 0:
        raise NoAnswer("skipped", f"no free slot in pool {plan.pool.name!r}")
    if decision.refuse is not None or decision.degrade_to is not None:
        raise NoAnswer("skipped", f"pool {plan.pool.name!r} is shedding")
    permit = await admission.acquire(wanted, decision)
    opened = await open_with(dispatcher, ctx, plan, permit)
    raw = await read_whole(opened, gateway.clock)
    if opened.degraded:
        raise NoAnswer("failed", "answered by a fallback pool")
    answer = json_object(ctx.policy.redactor.content(raw))
    if answer is None:
        raise NoAnswer("failed", "the answer is not JSON")
    return answer
