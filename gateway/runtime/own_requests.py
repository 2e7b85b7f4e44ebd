"""The gateway's own requests to its pools (summaries): the same path as a client's.

An internal request is a sheddable, non-streaming chat request: it passes the pool's
admission (so it never pushes a busy pool over its limit and is the first to be shed), then
the dispatcher (replica choice, retries, fallback, breaker, lease accounting), and its answer
is read whole (``read_whole``, which the sampled verification of cache hits shares). Its
public model name is ``INTERNAL_MODEL``, which is how its requests show in
``gateway_requests_total``.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Protocol

import orjson

from gateway.admission.controller import PoolAdmission
from gateway.admission.permit import Permit
from gateway.admission.queue import Priority
from gateway.errors import InternalError
from gateway.openai.request import ParsedRequest
from gateway.path.admit import admission_request
from gateway.path.context import Plan, RequestContext
from gateway.path.dispatch import Dispatcher, Opened
from gateway.path.exchange.lease import Outcome, Phase
from gateway.policy.compile import CompiledPolicy
from gateway.upstream import UpstreamIOError


class LivePath(Protocol):
    """What an internal request needs of the running gateway (``runtime.Gateway`` has it)."""

    @property
    def clock(self) -> Callable[[], float]: ...

    @property
    def policy(self) -> CompiledPolicy: ...

    @property
    def admissions(self) -> Mapping[str, PoolAdmission]: ...

    @property
    def dispatcher(self) -> Dispatcher | None: ...

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
        dispatcher = gateway.dispatcher
        if dispatcher is None:
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
        opened = await open_with(dispatcher, ctx, Plan(pool, "internal"), permit)
        return _message_text(await read_whole(opened, gateway.clock))


async def open_with(
    dispatcher: Dispatcher, ctx: RequestContext, plan: Plan, permit: Permit
) -> Opened:
    """The exchange opened on ``permit``'s slot; the slot is given back if it cannot be."""
    try:
        return await dispatcher.open(ctx, plan, permit)
    except BaseException:
        permit.release(latency_s=None, dropped=False)  # idempotent
        raise


async def read_whole(opened: Opened, clock: Callable[[], float]) -> bytes:
    """The whole body of an opened non-streaming exchange, read within what is left of the
    pool's ``total_s``; the lease is finished here, however the read ends."""
    lease = opened.lease
    outcome = Outcome.client_gone(Phase.NON_STREAMING)  # unless read or failed below
    left = lease.plan.pool.timeouts.total_s - (clock() - lease.ctx.arrival)
    try:
        async with asyncio.timeout(max(0.0, left)):
            raw = await opened.response.read(_MAX_ANSWER)
        outcome = Outcome(200, first_token_at=clock())
    except UpstreamIOError as exc:
        outcome = Outcome(502, error_kind="upstream_protocol")
        raise InternalError(f"internal request failed: {exc}") from None
    except TimeoutError:
        outcome = Outcome(504, error_kind="total_timeout")
        raise InternalError("internal request: no whole answer in time") from None
    finally:
        opened.response.close()
        lease.finish(outcome)
    return raw


def _message_text(raw: bytes) -> str:
    try:
        data = orjson.loads(raw)
        content = data["choices"][0]["message"]["content"]
    except (orjson.JSONDecodeError, KeyError, IndexError, TypeError):
        raise InternalError("internal request: the answer is not a chat completion") from None
    if not isinstance(content, str):
        raise InternalError("internal request: the answer has no text")
    return content
