"""Open the upstream exchange: retries before the first byte, then fallback pools.

Algorithm: in the planned pool, then in each pool of its ``fallback`` list whose context
window the request fits (``context.fits_pool``: a backend would refuse it), up to
``retry.attempts`` attempts, each on a replica this request has not tried yet, with
exponential backoff and jitter between them (``backoff_s``). Only retryable failures move on: a
refused connection, a backend's 429/500/502/503/504, a connection reset or closed after the
request was sent and before the response head (``upstream/failures.py``), no eligible replica.
The first attempt goes straight out; the retry loop costs nothing until an attempt fails.
Every retry and every move to a fallback pool spends from the shared retry budget, so
retries cannot amplify an overload; when the budget is spent, the last error is the answer.
All of this happens before a stream's first token (``exchange/first_token.py``: the
client's response head is held until then) or before a whole answer's head (its body is read
here, so a replica that dies in the middle of it is retried like one that refused), so nothing
the client has seen is ever retried. A stream's attempt is one first-token race
(``exchange/race.py``): a late first token is hedged on another replica, a stalled replica
is failed over to another with a free slot, a request an engine queues beyond its batch is
taken back to another replica, or to the gateway's queue (``exchange/readmission.py``: it
waits for a slot again in its place, then is dispatched again as here, or gets the waiter's
refusal; it does not spend an attempt). Each is counted in ``gateway_failovers_total``, as
is a retry here after a failure before the first token. A request that admission gave a slot
while every replica is at its cap (a hedge holds a slot admission does not count; a cap fell
since) waits for a replica's slot until its give-up time rather than being refused.

Parameters: pool ``retry`` (attempts, backoff_initial_s, backoff_max_s, jitter_s),
``fallback`` and ``recovery`` (hedge, hedge_budget, stall_factor, stall_min_s); policy
``retry_budget``; ``pool_state`` (admission's: how long since it was saturated, anything
waiting); ``sleep`` and
``rng`` (the jitter's; injectable).
"""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Awaitable, Callable
from dataclasses import replace
from functools import partial

from gateway.admission.permit import Permit
from gateway.backends.registry import BackendRegistry
from gateway.errors import GatewayError, GatewayTimeout
from gateway.metrics import GatewayMetrics
from gateway.path.context import Plan, RequestContext, evolve, fits_pool
from gateway.path.exchange.attempt import Opener, PoolStateOf, RaceOptions, Run
from gateway.path.exchange.choose import in_time, pick_backend
from gateway.path.exchange.first_token import STALL, Primed, read_first_token
from gateway.path.exchange.lease import CLIENT_GONE, Lease, Outcome, Phase
from gateway.path.exchange.race import Race
from gateway.path.exchange.readmission import BackToQueue, readmitted
from gateway.path.flow import Flow, Opened, Services
from gateway.path.report import Reporter
from gateway.recovery.continuation import (
    NONE,
    Relayed,
    chat_cut,
    continuation_body,
    first_token_wait_s,
)
from gateway.recovery.counters import RecoveryMetrics
from gateway.retry_budget import RetryBudget, RetryBudgetSettings
from gateway.scheduling.scheduler import RouteFacts, Scheduler
from gateway.schema import Retry

# Codes for "no replica to try in this pool": a reason to fall back, not to retry here.
_NO_REPLICA = frozenset({"no_healthy_backend", "pool_saturated"})
# The window of a pool's hedge budget (hedges at most ``hedge_budget`` of its requests).
HEDGE_WINDOW_S = 60.0


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
        return evolve(flow, opened=opened)
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
        recovery: RecoveryMetrics,
        pool_state: PoolStateOf = lambda pool: (math.inf, False),
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self._backends = backends
        self._scheduler = scheduler
        self.opener = proxy
        self._metrics = metrics
        self.budget = budget
        self._clock = clock
        self._report = report
        self._sleep = sleep
        self._rng = rng or random.Random()
        self.recovery = recovery
        self.pool_state = pool_state
        self._hedge_budgets: dict[str, RetryBudget] = {}

    async def open(self, ctx: RequestContext, plan: Plan, permit: Permit | None = None) -> Opened:
        """The first replica (or pool) that answers 200; ``permit`` is released by the last
        attempt's lease, or here when every attempt failed."""
        self.budget.on_request()
        run = Run(ctx, permit, RouteFacts.of(ctx.request, ctx.headers))
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
                primed = await self._in_pool(run, here)
            except GatewayError as exc:
                run.last = exc
                if not exc.retryable:
                    break
                continue
            if index:
                self._metrics.fallbacks.labels(plan.pool.name, pool.name).inc()
            return Opened(primed.lease, primed.response, degraded=index > 0, primed=primed)
        assert run.last is not None
        self._record_final(run, plan, run.last)
        raise run.last

    async def _in_pool(self, run: Run, plan: Plan) -> Primed:
        retry = plan.pool.settings.retry
        run.exhausted = False
        attempt = 1
        while True:
            try:
                return await self._attempt(run, plan)
            except BackToQueue as back:  # a slot again, or the waiter's refusal
                run.tried.remove(back.backend)  # the replica it left may serve it next
                run.permit = await readmitted(run.permit, self._metrics)
                continue
            except GatewayError as exc:
                if (
                    run.exhausted
                    or not _worth_another_replica(exc)
                    or attempt >= retry.attempts
                    or not self._spend(plan.pool.name, exc.code or "error")
                ):
                    raise
                if run.ctx.request.stream:  # before the first token: a failover
                    self.recovery.failovers.labels(plan.pool.name, "error").inc()
            await self._sleep(backoff_s(retry, attempt, self._rng))
            attempt += 1

    def lease(self, run: Run, plan: Plan) -> Lease:
        """A lease on the replica chosen now among those ``run`` has not tried."""
        choice = pick_backend(
            run.ctx, plan, self._backends, self._scheduler, run.facts, exclude=run.tried
        )
        run.tried.append(choice.backend.name)
        self._metrics.prefix_match.labels(plan.pool.name).observe(choice.prefix_match)
        return Lease(
            run.ctx,
            plan,
            choice.backend,
            self._metrics,
            self._clock,
            run.permit,
            self._report,
            prefix_match=choice.prefix_match,
        )

    async def _leased(self, run: Run, plan: Plan) -> Lease:
        """``lease``, waiting for a replica's slot when admission gave the request one while
        every replica is at its cap (``choose.in_time``): until its give-up time, or, with no
        objective or deadline, its total timeout; not after a failed attempt."""

        def until() -> float | None:
            if run.permit is None or run.last is not None:
                return None
            limit = run.permit.give_up()
            return run.ctx.arrival + plan.pool.timeouts.total_s if limit is None else limit

        lease = partial(self.lease, run, plan)
        return await in_time(lease, until, self._clock, self._sleep)

    async def _attempt(self, run: Run, plan: Plan) -> Primed:
        ctx = run.ctx
        try:
            lease = await self._leased(run, plan)
        except GatewayError:
            # Every replica was tried: the real failure says more than "none left".
            if run.last is not None:
                run.exhausted = True
                raise run.last from None
            raise
        if len(run.tried) == 1 and not run.taken:
            queued = run.permit.queued_s if run.permit is not None else 0.0
            self._metrics.overhead.observe(overhead_s(self._clock(), ctx, queued))
        if ctx.request.stream:
            return await self._race(run, plan, lease)
        try:
            response = await self.opener.open(lease)
            # Read whole before its head goes out: a replica that dies in the middle of it
            # has shown the client nothing, so another may answer (a retry as any other).
            body = await self.opener.read_whole(lease, response)
        except GatewayError as exc:
            lease.finish(Outcome(exc.http_status(), error_kind=exc.code or "error", retried=True))
            run.last = exc
            raise
        except asyncio.CancelledError:
            phase = Phase.FIRST_TOKEN if ctx.request.stream else Phase.NON_STREAMING
            lease.finish(Outcome.client_gone(phase))
            raise
        return Primed(lease, response, held=[body])

    async def _race(self, run: Run, plan: Plan, lease: Lease) -> Primed:
        """A stream's attempt, up to its first token (``exchange/race.py``)."""
        pool = plan.pool
        timeouts = pool.timeouts
        deadline = min(lease.started + timeouts.first_token_s, run.ctx.arrival + timeouts.total_s)
        options = RaceOptions(self, run, plan)
        race = Race(options, pool.settings.recovery, self._clock, self.recovery, pool.name)
        try:
            return await race.run(lease, deadline)
        except GatewayError as exc:
            run.last = exc
            raise
        except TimeoutError:
            error = GatewayTimeout(
                "No first token within the pool's first_token_s.", code="upstream_timeout"
            )
            run.last = error
            raise error from None

    def may_continue(self, lease: Lease) -> bool:
        """Whether ``lease``'s stream could be continued elsewhere if cut short (its text is
        kept then): the pool's ``recovery`` allows it, the endpoint is chat (with a replica
        that can continue) or completions."""
        ctx, pool = lease.ctx, lease.plan.pool
        settings, endpoint = pool.settings.recovery, ctx.request.endpoint
        if not settings.continue_streams or settings.max_continuations < 1:
            return False
        if endpoint == "completions":
            return True
        replicas = self._backends.in_pool(ctx.policy, pool.name)
        return endpoint == "chat" and any(s.spec.continue_with != NONE for s in replicas)

    async def continuation(self, lease: Lease, relayed: Relayed, tried: list[str]) -> Primed | None:
        """``splice.Resume``: ``lease``'s stream continued on another replica, at its first
        token, or None (no replica can, or the one asked failed)."""
        ctx, plan = lease.ctx, lease.plan
        endpoint = ctx.request.endpoint
        if endpoint == "chat":  # replicas that cannot continue are not asked
            replicas = self._backends.in_pool(ctx.policy, plan.pool.name)
            tried.extend(s.name for s in replicas if s.spec.continue_with == NONE)
        run = Run(ctx, lease.permit, RouteFacts.of(ctx.request, ctx.headers), tried=tried)
        try:
            new = self.lease(run, plan)
        except GatewayError:
            return None
        body = continuation_body(
            endpoint, ctx.request.body, relayed, new.backend.spec.continue_with
        )
        outcome = Outcome(CLIENT_GONE, retried=True)
        if body is not None and endpoint == "chat":
            relayed.owe(chat_cut(relayed))
        try:
            if body is not None:
                wait = first_token_wait_s(
                    plan.pool.timeouts.first_token_s, self._remaining(ctx, plan)
                )
                async with asyncio.timeout(wait):
                    response = await self.opener.open(new, body)
                    return await read_first_token(new, response, self._clock)
        except TimeoutError:
            outcome = Outcome(503, error_kind=STALL, retried=True)
        except GatewayError as exc:
            outcome = Outcome(exc.http_status(), error_kind=exc.code or "error", retried=True)
        new.finish(outcome)
        return None

    def _remaining(self, ctx: RequestContext, plan: Plan) -> float:
        return max(0.0, ctx.arrival + plan.pool.timeouts.total_s - self._clock())

    def hedge_budget(self, plan: Plan) -> RetryBudget:
        """The pool's hedge budget (a new one when its ``hedge_budget`` changed)."""
        ratio = plan.pool.settings.recovery.hedge_budget
        budget = self._hedge_budgets.get(plan.pool.name)
        if budget is None or budget.settings.ratio != ratio:
            settings = RetryBudgetSettings(ratio, HEDGE_WINDOW_S, min_retries_per_s=0.0)
            budget = self._hedge_budgets[plan.pool.name] = RetryBudget(settings, self._clock)
        return budget

    def alternative_s(self, run: Run, plan: Plan, lease: Lease) -> float | None:
        """The soonest expected first token (the prediction itself, not its upper band)
        among the pool's other routable replicas with a free slot."""
        found = [
            s.ttft_model.predict(s.ttft_features(s.token_count.estimate(lease.chars)))
            for s in self._backends.in_pool(run.ctx.policy, plan.pool.name)
            if s.name not in run.tried
            and s.routable
            and s.has_capacity
            and s.spec.serves(run.ctx.request.endpoint)
        ]
        return min(found, default=None)

    def other_replicas(self, run: Run, plan: Plan, lease: Lease) -> bool:
        """Whether the pool has a routable replica besides ``lease``'s that serves the
        request's endpoint (full or not: its next free slot may come first)."""
        endpoint, here = run.ctx.request.endpoint, lease.backend.name
        return any(
            s.name != here and s.routable and s.spec.serves(endpoint)
            for s in self._backends.in_pool(run.ctx.policy, plan.pool.name)
        )

    def _spend(self, pool: str, reason: str) -> bool:
        if self.budget.try_spend():
            self._metrics.retries.labels(pool, reason).inc()
            return True
        self._metrics.retry_budget_exhausted.inc()
        return False

    def _record_final(self, run: Run, plan: Plan, error: GatewayError) -> None:
        backend = run.tried[-1] if run.tried else "none"
        # Counted in gateway_requests_total where it is answered (``report.refused``), by
        # the pool and backend named here.
        if run.permit is not None:
            run.permit.release(latency_s=None, dropped=bool(run.tried))
        # Say where it failed: the client's first question when reading an error.
        error.headers.setdefault("x-gateway-pool", plan.pool.name)
        if run.tried:
            error.headers.setdefault("x-gateway-backend", backend)


def backoff_s(retry: Retry, failed: int, rng: random.Random) -> float:
    """The wait after the ``failed``-th attempt: ``backoff_initial_s * 2**(failed - 1)`` plus a
    uniform jitter in [0, ``jitter_s``], at most ``backoff_max_s``."""
    wait: float = retry.backoff_initial_s * 2.0 ** (failed - 1) + rng.uniform(0, retry.jitter_s)
    return max(0.0, min(wait, retry.backoff_max_s))


def overhead_s(now: float, ctx: RequestContext, queued_s: float) -> float:
    """The gateway's own time from arrival to the first attempt: the waits it does not
    spend working (``queued_s`` for a slot, ``ctx.embed_s`` for the question's embedding)
    have their own metrics."""
    return max(0.0, now - ctx.arrival - queued_s - ctx.embed_s)


def _worth_another_replica(exc: BaseException) -> bool:
    return isinstance(exc, GatewayError) and exc.retryable and exc.code not in _NO_REPLICA
