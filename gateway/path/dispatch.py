"""Open the upstream exchange: retries before the first byte, then fallback pools.

Algorithm: in the planned pool, then in each pool of its ``fallback`` list whose context
window the request fits (``context.fits_pool``: a backend would refuse it), up to
``retry.attempts`` attempts, each on a replica this request has not tried yet, with
exponential backoff and jitter between them (tenacity). Only retryable failures move on: a
refused connection, a backend's 429/500/502/503/504, a connection reset or closed after the
request was sent and before the response head (``upstream/failures.py``), no eligible replica.
Every retry and every move to a fallback pool spends from the shared retry budget, so
retries cannot amplify an overload; when the budget is spent, the last error is the answer.
All of this happens before the backend's 200 head, so nothing the client has seen is ever
retried.

Parameters: pool ``retry`` (attempts, backoff_initial_s, backoff_max_s, jitter_s) and
``fallback``; policy ``retry_budget``; ``sleep`` (injectable, for tests).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    stop_any,
    wait_exponential_jitter,
)
from tenacity.stop import stop_base

from gateway.admission.permit import Permit
from gateway.admission.retry_after import retry_after_s
from gateway.backends.state import BackendRegistry, BackendState
from gateway.errors import GatewayError, ServiceUnavailable
from gateway.metrics import GatewayMetrics
from gateway.path.context import Plan, RequestContext, fits_pool
from gateway.path.exchange.lease import Lease, Outcome, Phase
from gateway.path.flow import Flow, Opened, Services
from gateway.path.report import Reporter
from gateway.retry_budget import RetryBudget
from gateway.scheduling.picker import NoBackend
from gateway.scheduling.scheduler import Choice, RouteFacts, Scheduler
from gateway.upstream import UpstreamResponse

# Codes for "no replica to try in this pool": a reason to fall back, not to retry here.
_NO_REPLICA = frozenset({"no_healthy_backend", "pool_saturated"})


@dataclass(slots=True)
class _Run:
    """One request's way through the attempts."""

    ctx: RequestContext
    permit: Permit | None
    facts: RouteFacts
    tried: list[str] = field(default_factory=list)
    last: GatewayError | None = None
    # Every replica of the current pool was tried: retrying there would only spend budget.
    exhausted: bool = False


class Opener(Protocol):
    """Sends one attempt's request and waits for the replica's 200 head (``relay.Proxy``)."""

    async def open(self, lease: Lease) -> UpstreamResponse: ...


async def dispatch_stage(flow: Flow, services: Services) -> Flow:
    """The flow with its opened exchange; the response headers say where it went."""
    permit, headers = flow.permit, flow.headers
    try:
        opened = await services.dispatcher.open(flow.ctx, flow.planned(), permit)
    except BaseException:
        # Released already unless the request ended between attempts; release is idempotent.
        if permit is not None:
            permit.release(latency_s=None, dropped=False)
        raise
    lease = opened.lease
    headers["x-gateway-pool"] = lease.plan.pool.name
    headers["x-gateway-route-reason"] = lease.plan.reason
    headers["x-gateway-backend"] = lease.backend.name
    if not (opened.degraded or flow.degraded):
        return replace(flow, opened=opened)
    headers["x-gateway-degraded"] = "1"
    # The cache key names the planned pool: a smaller pool's answer is not its.
    return replace(flow, opened=opened, capture=None)


class Dispatcher:
    def __init__(
        self,
        *,
        backends: BackendRegistry,
        scheduler: Scheduler,
        proxy: Opener,
        metrics: GatewayMetrics,
        budget: RetryBudget,
        clock: Callable[[], float],
        report: Reporter,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._backends = backends
        self._scheduler = scheduler
        self._proxy = proxy
        self._metrics = metrics
        self.budget = budget
        self._clock = clock
        self._report = report
        self._sleep = sleep

    async def open(self, ctx: RequestContext, plan: Plan, permit: Permit | None = None) -> Opened:
        """The first replica (or pool) that answers 200; ``permit`` is released by the last
        attempt's lease, or here when every attempt failed."""
        self.budget.on_request()
        run = _Run(ctx, permit, RouteFacts.of(ctx.request, ctx.headers))
        fallbacks = (ctx.policy.pools[name] for name in plan.pool.settings.fallback)
        endpoint = ctx.request.endpoint
        pools = [
            plan.pool,
            *(p for p in fallbacks if fits_pool(ctx, plan, p) and p.serves(endpoint)),
        ]
        for index, pool in enumerate(pools):
            if index and not self._spend(plan.pool.name, "fallback"):
                break
            here = (
                plan
                if index == 0
                else replace(plan, pool=pool, reason=f"{plan.reason};fallback:{pool.name}")
            )
            try:
                lease, response = await self._in_pool(run, here)
            except GatewayError as exc:
                run.last = exc
                if not exc.retryable:
                    break
                continue
            if index:
                self._metrics.fallbacks.labels(plan.pool.name, pool.name).inc()
            return Opened(lease, response, degraded=index > 0)
        assert run.last is not None
        self._record_final(run, plan, run.last)
        raise run.last

    async def _in_pool(self, run: _Run, plan: Plan) -> tuple[Lease, UpstreamResponse]:
        retry = plan.pool.settings.retry
        run.exhausted = False
        retrying = AsyncRetrying(
            stop=stop_any(
                stop_after_attempt(retry.attempts),
                _OutOfBudget(lambda reason: self._spend(plan.pool.name, reason)),
            ),
            wait=wait_exponential_jitter(
                multiplier=retry.backoff_initial_s, max=retry.backoff_max_s, jitter=retry.jitter_s
            ),
            retry=retry_if_exception(lambda exc: not run.exhausted and _worth_another_replica(exc)),
            sleep=self._sleep,
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                return await self._attempt(run, plan)
        raise AssertionError("tenacity ends with a result or an exception")  # pragma: no cover

    async def _attempt(self, run: _Run, plan: Plan) -> tuple[Lease, UpstreamResponse]:
        ctx = run.ctx
        try:
            choice = pick_backend(
                ctx, plan, self._backends, self._scheduler, run.facts, exclude=run.tried
            )
        except GatewayError:
            # Every replica was tried: the real failure says more than "none left".
            if run.last is not None:
                run.exhausted = True
                raise run.last from None
            raise
        backend = choice.backend
        run.tried.append(backend.name)
        self._metrics.prefix_match.labels(plan.pool.name).observe(choice.prefix_match)
        lease = Lease(
            ctx,
            plan,
            backend,
            self._metrics,
            self._clock,
            run.permit,
            self._report,
            prefix_match=choice.prefix_match,
        )
        if len(run.tried) == 1:
            queued = run.permit.queued_s if run.permit is not None else 0.0
            self._metrics.overhead.observe(overhead_s(self._clock(), ctx, queued))
        try:
            response = await self._proxy.open(lease)
        except GatewayError as exc:
            lease.finish(Outcome(exc.http_status(), error_kind=exc.code or "error", retried=True))
            run.last = exc
            raise
        except asyncio.CancelledError:
            phase = Phase.FIRST_TOKEN if ctx.request.stream else Phase.NON_STREAMING
            lease.finish(Outcome.client_gone(phase))
            raise
        return lease, response

    def _spend(self, pool: str, reason: str) -> bool:
        if self.budget.try_spend():
            self._metrics.retries.labels(pool, reason).inc()
            return True
        self._metrics.retry_budget_exhausted.inc()
        return False

    def _record_final(self, run: _Run, plan: Plan, error: GatewayError) -> None:
        backend = run.tried[-1] if run.tried else "none"
        # Counted in gateway_requests_total where it is answered (``report.refused``), by
        # the pool and backend named here.
        if run.permit is not None:
            run.permit.release(latency_s=None, dropped=bool(run.tried))
        # Say where it failed: the client's first question when reading an error.
        error.headers.setdefault("x-gateway-pool", plan.pool.name)
        if run.tried:
            error.headers.setdefault("x-gateway-backend", backend)


class _OutOfBudget(stop_base):
    """Stops when the retry budget refuses; asked only once the attempts allow a retry."""

    def __init__(self, spend: Callable[[str], bool]) -> None:
        self._spend = spend

    def __call__(self, retry_state: RetryCallState) -> bool:
        outcome = retry_state.outcome
        failure = outcome.exception() if outcome is not None else None
        reason = failure.code if isinstance(failure, GatewayError) and failure.code else "error"
        return not self._spend(reason)


def overhead_s(now: float, ctx: RequestContext, queued_s: float) -> float:
    """The gateway's own time from arrival to the first attempt: the waits it does not
    spend working (``queued_s`` for a slot, ``ctx.embed_s`` for the question's embedding)
    have their own metrics."""
    return max(0.0, now - ctx.arrival - queued_s - ctx.embed_s)


def _worth_another_replica(exc: BaseException) -> bool:
    return isinstance(exc, GatewayError) and exc.retryable and exc.code not in _NO_REPLICA


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
