"""Admission for one pool: a concurrency limit, a priority waiting room, honest shedding.

Enforcement only; the algorithms are the pure modules beside it (``limits``, ``queue``,
``drain``, ``ladder``, ``retry_after``). A request is first ``check``-ed: refused at once
(429 with a Retry-After from the estimated drain time) when a hard queue cap is hit, when its
deadline cannot be met by the estimated wait, when the estimated wait passes ``max_wait_s``
(critical requests excepted), or when the overload ladder sheds its priority; or told to
degrade to another pool. Then it ``acquire``-s a slot: at once when one is free and nobody
waits, otherwise in the queue (priority, then deadline, then arrival; short and long lanes).
A waiter whose client leaves or whose deadline passes leaves the queue. ``Permit.release``
frees the slot and feeds the limit algorithm the backend's latency and the drain rate its work.

With a ``LeaseGate`` (cluster admission), a slot also needs a lease from the gate, and the
local limit is capped by the gate (the local share while Redis is unreachable). A request
that finds a free local slot asks for its lease at once; when the cluster is full it waits
in the queue like any other. Then one pump task per pool asks for a lease for whoever is
next (so priority, deadline and lane order hold) and hands it over, retrying when a slot or
lease frees or every ``poll_s``.

Parameters: the pool's ``admission`` settings in the policy.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass

from gateway.admission.drain import DrainRate
from gateway.admission.gate import LeaseGate
from gateway.admission.ladder import Action, Ladder, Signals, Step, verdict
from gateway.admission.limits import (
    AimdLimit,
    AimdSettings,
    GradientLimit,
    GradientSettings,
    LimitAlgorithm,
    StaticLimit,
)
from gateway.admission.prefill import PrefillBudget
from gateway.admission.queue import AdmissionQueue, Lane, Priority, Ticket
from gateway.admission.retry_after import retry_after_s
from gateway.errors import GatewayError, GatewayTimeout, RateLimited
from gateway.metrics import GatewayMetrics
from gateway.policy.compile import PoolSpec
from gateway.policy.schema import LadderStep, Limit


@dataclass(frozen=True, slots=True)
class AdmissionRequest:
    priority: Priority
    lane: Lane
    cost: float  # estimated work: prompt plus output tokens
    deadline: float | None  # absolute, on the admission clock
    degradable: bool  # the gateway chose the pool (model: auto), so it may choose another
    prompt_tokens: float = 0.0  # what prefill pacing counts


# A standard short request with no work of its own: what "the pool's wait now" means.
PROBE = AdmissionRequest(Priority.STANDARD, Lane.SHORT, 0.0, None, degradable=False)


@dataclass(frozen=True, slots=True)
class Decision:
    degrade_to: str | None = None


class Permit:
    """A slot in the pool, held from admission until the request ends."""

    __slots__ = ("_admission", "_cost", "_lease", "_prefill", "_released", "queued_s")

    def __init__(
        self,
        admission: PoolAdmission,
        cost: float,
        queued_s: float,
        lease: str | None = None,
        prefill: float = 0.0,
    ) -> None:
        self._admission = admission
        self._cost = cost
        self._lease = lease
        self._prefill = prefill
        self._released = False
        self.queued_s = queued_s

    def prefilled(self) -> None:
        """The request's first token arrived: its prompt no longer counts for pacing."""
        if self._prefill:
            tokens, self._prefill = self._prefill, 0.0
            self._admission.prefilled(tokens)

    def release(self, *, latency_s: float | None, dropped: bool) -> None:
        if not self._released:
            self._released = True
            self.prefilled()
            self._admission.release(self._cost, latency_s, dropped, self._lease)


@dataclass(slots=True)
class _Waiter:
    granted: asyncio.Future[str | None]
    prefill: float


class PoolAdmission:
    def __init__(
        self,
        pool: PoolSpec,
        *,
        clock: Callable[[], float],
        metrics: GatewayMetrics,
        backend_load: Callable[[], tuple[float, float]],
        leases: LeaseGate | None = None,
    ) -> None:
        self.pool = pool
        self.leases = leases
        self.settings = pool.settings.admission
        self._clock = clock
        self._metrics = metrics
        self._backend_load = backend_load  # (summed waiting, mean KV usage) of the pool
        self.limit = build_limit(self.settings.limit, pool.capacity)
        self.queue = AdmissionQueue(long_lane_share=self.settings.long_lane_share)
        self.drain = DrainRate(clock=clock)
        steps = tuple(_step(s) for s in self.settings.ladder)
        self.ladder = Ladder(steps, self.settings.hysteresis)
        self.step = 0
        self.inflight = 0
        self.prefill = PrefillBudget(self.settings.max_prefill_tokens)
        self._pumping = False
        self._wake = asyncio.Event()

    # the decision

    def check(self, request: AdmissionRequest) -> Decision:
        """Refuse (raise) or admit, maybe with a degrade note; never waits."""
        wait = self.estimated_wait(request)
        self._refuse_if_full(request, wait)
        if wait is not None:
            if request.deadline is not None and self._clock() + wait > request.deadline:
                raise self._shed(request, "deadline_unmeetable", wait)
            too_long = wait > self.settings.max_wait_s
            if too_long and request.priority is not Priority.CRITICAL:
                raise self._shed(request, "wait_too_long", wait)
        self._update_step(wait)
        active = [s.action for s in self.ladder.steps[: self.step]]
        outcome = verdict(active, request.priority)
        if outcome == "shed":
            raise self._shed(request, f"overload_step_{self.step}", wait)
        if outcome == "degrade" and request.degradable and self.settings.degrade_to:
            return Decision(degrade_to=self.settings.degrade_to)
        return Decision()

    def estimated_wait(self, request: AdmissionRequest) -> float | None:
        if self._has_free_slot():
            return 0.0
        # With every slot busy, about one request's worth of work must drain before a slot
        # frees, even when nobody is queued ahead.
        ahead = self.queue.work_ahead(request.priority, request.lane) + request.cost
        return self.drain.estimated_wait(ahead)

    # the slot

    async def acquire(self, request: AdmissionRequest) -> Permit:
        start = self._clock()
        tokens = request.prompt_tokens
        if self._has_free_slot():
            self.inflight += 1
            self.prefill.start(tokens)
            if self.leases is None:
                return Permit(self, request.cost, 0.0, prefill=tokens)
            lease = await self._lease_now(self.leases, tokens)
            if lease is not None:
                return Permit(self, request.cost, 0.0, lease, tokens)
        granted: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        ticket = Ticket(
            priority=request.priority,
            lane=request.lane,
            cost=request.cost,
            deadline=request.deadline,
            enqueued_at=start,
            payload=_Waiter(granted, tokens),
        )
        self.queue.push(ticket)
        if self.leases is not None:
            self._kick()
        try:
            await self._wait(granted, request)
        except BaseException:
            self._leave(ticket, granted)
            raise
        queued = self._clock() - start
        self._metrics.queue_wait.labels(self.pool.name).observe(queued)
        return Permit(self, request.cost, queued, granted.result(), tokens)

    def release(
        self, cost: float, latency_s: float | None, dropped: bool, lease: str | None = None
    ) -> None:
        self.inflight -= 1
        if self.leases is not None and lease is not None:
            self.leases.release(lease, self._kick)
        elif self.leases is not None:
            self._kick()
        self.drain.on_complete(cost)
        if latency_s is not None or dropped:
            self.limit.on_sample(
                latency_s=latency_s or 0.0, inflight=self.inflight, dropped=dropped
            )
        self._dispatch()
        self._update_step(self.estimated_wait(PROBE))

    def prefilled(self, tokens: float) -> None:
        self.prefill.done(tokens)
        if self.leases is not None:
            self._kick()
        else:
            self._dispatch()

    # internals

    def _slots(self) -> int:
        limit = self.limit.limit
        return limit if self.leases is None else min(limit, self.leases.cap(limit))

    def _has_free_slot(self) -> bool:
        free = self.inflight < self._slots() and not self.queue and self.prefill.has_room()
        return free and (self.leases is None or self.leases.may_try(self.limit.limit))

    async def _lease_now(self, leases: LeaseGate, tokens: float) -> str | None:
        """The lease of a request that found a free local slot (``inflight`` and the prefill
        count already include it)."""
        try:
            lease = await leases.acquire(self.limit.limit)
        except BaseException:
            self._unclaim(tokens)
            raise
        if lease is None:
            self._unclaim(tokens)
        return lease

    def _unclaim(self, tokens: float) -> None:
        self.inflight -= 1
        self.prefill.done(tokens)

    async def _wait(self, granted: asyncio.Future[str | None], request: AdmissionRequest) -> None:
        if request.deadline is None:
            await granted
            return
        try:
            async with asyncio.timeout(max(0.0, request.deadline - self._clock())):
                await asyncio.shield(granted)
        except TimeoutError:
            self._count_shed(request, "deadline_exceeded")
            raise GatewayTimeout(
                "The request's deadline passed while it waited for a slot.",
                code="deadline_exceeded",
            ) from None

    def _leave(self, ticket: Ticket, granted: asyncio.Future[str | None]) -> None:
        if granted.done() and not granted.cancelled():
            # The slot came just as the waiter left: hand it on.
            assert isinstance(ticket.payload, _Waiter)
            self.prefill.done(ticket.payload.prefill)
            self.release(ticket.cost, None, dropped=False, lease=granted.result())
        else:
            self.queue.remove(ticket)
            granted.cancel()

    def _dispatch(self) -> None:
        if self.leases is not None:
            return  # the pump dispatches, once the lease is back (``release(..., then)``)
        while self.inflight < self.limit.limit and self.prefill.has_room():
            if not self._grant(None):
                return

    def _grant(self, lease: str | None) -> bool:
        """Give a slot (and its lease) to the next live waiter; False when nobody waits."""
        while (ticket := self.queue.pop()) is not None:
            waiter = ticket.payload
            assert isinstance(waiter, _Waiter)
            if waiter.granted.done():
                continue
            self.inflight += 1
            self.prefill.start(waiter.prefill)
            waiter.granted.set_result(lease)
            return True
        return False

    def _kick(self) -> None:
        """Wake the lease pump, starting it when waiters have none running."""
        self._wake.set()
        if self.leases is not None and self.queue and not self._pumping:
            self._pumping = True
            self.leases.spawn(self._pump(self.leases))

    async def _pump(self, leases: LeaseGate) -> None:
        """While requests wait: get a lease for whoever is next, then hand it over."""
        try:
            while self.queue:
                self._wake.clear()  # a wake from here on is kept for the nap below
                if self.inflight >= self._slots() or not self.prefill.has_room():
                    await self._nap(leases.poll_s)
                    continue
                lease = await leases.acquire(self.limit.limit)
                if lease is None:
                    await self._nap(leases.poll_s)
                elif not self._grant(lease):
                    leases.release(lease, _nothing)
        finally:
            self._pumping = False

    async def _nap(self, poll_s: float) -> None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(poll_s):
                await self._wake.wait()

    def _refuse_if_full(self, request: AdmissionRequest, wait: float | None) -> None:
        if self._has_free_slot():
            return
        if len(self.queue) >= self.settings.max_queue:
            raise self._shed(request, "queue_full", wait)
        long_depth = self.queue.depth(lane=Lane.LONG)
        if request.lane is Lane.LONG and long_depth >= self.settings.max_queue_long:
            raise self._shed(request, "long_queue_full", wait)

    def _update_step(self, wait: float | None) -> None:
        waiting, kv = self._backend_load()
        signals = Signals(
            queue_depth=len(self.queue),
            estimated_wait_s=wait,
            backend_waiting=waiting,
            kv_usage=kv,
        )
        self.step = self.ladder.step(signals, self.step)

    def _shed(self, request: AdmissionRequest, reason: str, wait: float | None) -> GatewayError:
        self._count_shed(request, reason)
        waited = "unknown" if wait is None else f"{wait:.1f}s"
        return RateLimited(
            f"Pool '{self.pool.name}' is overloaded ({reason.replace('_', ' ')}); "
            f"estimated wait {waited}.",
            code=reason,
            retry_after_s=retry_after_s(wait),
        )

    def _count_shed(self, request: AdmissionRequest, reason: str) -> None:
        self._metrics.shed.labels(self.pool.name, reason, request.priority.name.lower()).inc()


def build_limit(settings: Limit, capacity: int) -> LimitAlgorithm:
    top = settings.max_limit or capacity
    start = min(settings.initial or top, top)
    floor = min(settings.min_limit, top)  # a policy's floor above the pool's capacity
    if settings.kind == "aimd":
        return AimdLimit(
            AimdSettings(
                initial=start,
                min_limit=floor,
                max_limit=top,
                target_s=settings.target_ttft_s,
                backoff_ratio=settings.backoff_ratio,
            )
        )
    if settings.kind == "gradient":
        return GradientLimit(
            GradientSettings(
                initial=start,
                min_limit=floor,
                max_limit=top,
                tolerance=settings.tolerance,
            )
        )
    return StaticLimit(start)


def _step(spec: LadderStep) -> Step:
    return Step(
        action=Action(spec.action),
        queue_depth=spec.queue_depth,
        wait_s=spec.wait_s,
        backend_waiting=spec.backend_waiting,
        kv_usage=spec.kv_usage,
    )


def _nothing() -> None:
    return None
