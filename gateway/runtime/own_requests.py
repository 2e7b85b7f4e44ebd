"""The gateway's own requests to its pools: the same path as a client's.

Two kinds: summaries of dropped conversation runs (``InternalCompletion``), and the backend's
answer to a sampled semantic hit (``backend_answer``, for ``cache/verification``).

An internal request is a sheddable, non-streaming chat request: it passes the pool's
admission (so it never pushes a busy pool over its limit and is the first to be shed), then
the dispatcher (replica choice, retries, fallback, breaker, lease accounting), and its answer
is read whole by the dispatch stage (``whole_body`` takes it, as the sampled verification
of cache hits does). Its public model name is ``INTERNAL_MODEL``, which is how its requests show in
``gateway_requests_total``.

Sampled verification: ``cache/verification/sampling.py`` draws a share of semantic hits
and, in the background, asks the backend the same request through ``backend_answer``: the
way a miss would go (plan, compress,
the pool's admission, the dispatcher's replica choice, retries, breaker and leases), with the
request's own body and context (its tenant, its headers as the path sees them; the backend
gets its own key, never the client's, as for any request), but non-streaming and sheddable.
It never waits for capacity: when the pool has no free slot, or its admission would refuse
or degrade the request, it is skipped, so verification adds no load to a busy pool and no
wait for anyone. An answer from a fallback pool is not compared (it is not the planned
pool's). Its backend calls show in ``gateway_requests_total`` with ``cache="verify"``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Protocol

import orjson

from gateway.admission.controller import PoolAdmission
from gateway.admission.permit import Permit
from gateway.admission.queue import Priority
from gateway.cache.verification.sampling import NoAnswer
from gateway.errors import GatewayError, InternalError
from gateway.metric_labels import NO_BACKEND
from gateway.metrics import GatewayMetrics
from gateway.openai.request import ParsedRequest
from gateway.path.admit import admission_request
from gateway.path.compress import compress_request
from gateway.path.context import Plan, RequestContext
from gateway.path.dispatch import Dispatcher
from gateway.path.exchange.events import json_object
from gateway.path.exchange.lease import Outcome
from gateway.path.flow import Opened
from gateway.path.plan import plan_pool
from gateway.policy.compile import CompiledPolicy
from gateway.rewrite.summaries import SummaryService
from gateway.tracing.marks import StageMarks


class LivePath(Protocol):
    """What an internal request needs of the running gateway (``parts.Gateway`` has it)."""

    @property
    def clock(self) -> Callable[[], float]: ...

    @property
    def policy(self) -> CompiledPolicy: ...

    @property
    def admissions(self) -> Mapping[str, PoolAdmission]: ...

    @property
    def started(self) -> bool: ...

    @property
    def dispatcher(self) -> Dispatcher: ...

    @property
    def metrics(self) -> GatewayMetrics: ...

    @property
    def summaries(self) -> SummaryService | None: ...

    def prompt_tokens(self, pool: str, chars: int) -> float: ...


INTERNAL_MODEL = "gateway-internal"
_MAX_ANSWER = 1024 * 1024


class InternalCompletion:
    """``await InternalCompletion(gateway)(pool, body)`` -> the answer's message text."""

    def __init__(self, gateway: LivePath) -> None:
        self._gateway = gateway

    async def __call__(self, pool_name: str, body: dict[str, Any]) -> str:
        gateway = self._gateway
        policy = gateway.policy
        pool = policy.pools.get(pool_name)
        admission = gateway.admissions.get(pool_name)
        if pool is None or admission is None:
            raise InternalError(f"no pool {pool_name!r} for an internal request")
        if not gateway.started:
            raise InternalError("internal request before the gateway started")
        request = ParsedRequest("chat", INTERNAL_MODEL, False, {**body, "stream": False})
        ctx = RequestContext(
            uuid.uuid4().hex, gateway.clock(), request, policy, {}, Priority.SHEDDABLE
        )
        wanted = admission_request(ctx, admission, False, gateway.prompt_tokens)
        decision = admission.check(wanted)
        if decision.refuse is not None:
            raise admission.refusal(wanted, decision)
        permit = await admission.acquire(wanted, decision)
        # Measured from here: the gateway's overhead histogram should not see the queue wait.
        ctx = replace(ctx, arrival=gateway.clock())
        opened = await open_with(gateway, ctx, Plan(pool, "internal"), permit)
        return _message_text(whole_body(opened, gateway.clock))


async def open_with(gateway: LivePath, ctx: RequestContext, plan: Plan, permit: Permit) -> Opened:
    """The exchange opened on ``permit``'s slot; the slot is given back if it cannot be. A
    failure is counted in ``gateway_requests_total`` here, as a client's is where the edge
    answers it (``path/report.py``)."""
    try:
        return await gateway.dispatcher.open(ctx, plan, permit)
    except BaseException as exc:
        permit.release(latency_s=None, dropped=False)  # idempotent
        if isinstance(exc, GatewayError):
            pool = exc.headers.get("x-gateway-pool", plan.pool.name)
            backend = exc.headers.get("x-gateway-backend", NO_BACKEND)
            cache = ctx.cache or "bypass"
            status = str(exc.http_status())
            gateway.metrics.requests.labels(ctx.request.model, pool, backend, status, cache).inc()
        raise


def whole_body(opened: Opened, clock: Callable[[], float]) -> bytes:
    """The body of an opened non-streaming exchange (the dispatch stage read it whole);
    the lease is finished here."""
    opened.response.close()
    opened.lease.finish(Outcome(200, first_token_at=clock()))
    return b"".join(opened.primed.held)[:_MAX_ANSWER]


def _message_text(raw: bytes) -> str:
    try:
        data = orjson.loads(raw)
        content = data["choices"][0]["message"]["content"]
    except (orjson.JSONDecodeError, KeyError, IndexError, TypeError):
        raise InternalError("internal request: the answer is not a chat completion") from None
    if not isinstance(content, str):
        raise InternalError("internal request: the answer has no text")
    return content


VERIFY = "verify"  # the cache label of its backend calls


async def backend_answer(gateway: LivePath, ctx: RequestContext) -> dict[str, Any]:
    """The backend's whole answer to ``ctx``'s request; raises ``NoAnswer``."""
    try:
        return await _ask(gateway, _verification_of(gateway, ctx))
    except GatewayError as exc:
        raise NoAnswer("failed", exc.message) from None


def _verification_of(gateway: LivePath, ctx: RequestContext) -> RequestContext:
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


async def _ask(gateway: LivePath, ctx: RequestContext) -> dict[str, Any]:
    if not gateway.started:
        raise NoAnswer("skipped", "the gateway is not serving")
    ctx, plan = compress_request(ctx, plan_pool(ctx), gateway.summaries, gateway.metrics, {})
    admission = gateway.admissions[plan.pool.name]
    wanted = admission_request(ctx, admission, False, gateway.prompt_tokens)
    decision = admission.check(wanted)  # its prediction says whether a slot is free now
    if decision.prediction.wait_s > 0:
        raise NoAnswer("skipped", f"no free slot in pool {plan.pool.name!r}")
    if decision.refuse is not None or decision.degrade_to is not None:
        raise NoAnswer("skipped", f"pool {plan.pool.name!r} is shedding")
    permit = await admission.acquire(wanted, decision)
    opened = await open_with(gateway, ctx, plan, permit)
    raw = whole_body(opened, gateway.clock)
    if opened.degraded:
        raise NoAnswer("failed", "answered by a fallback pool")
    answer = json_object(ctx.policy.redactor.content(raw))
    if answer is None:
        raise NoAnswer("failed", "the answer is not JSON")
    return answer
