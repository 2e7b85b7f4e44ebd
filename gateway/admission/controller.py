"""Admission for one pool: serve in time or refuse at once, with an honest Retry-After.

Enforcement only; the algorithms are the pure modules beside it (``objective``, ``hold``,
``queue``, ``limits``, ``ladder``, ``retry_after``; the backends' TTFT predictor is
``backends/ttft.py``). A request is first ``check``-ed, which returns a ``Decision`` (a
value; nothing is counted or raised there):

    predicted TTFT = wait for a slot (0 when one is free; else from its place in the queue
                     and how long slots are held, ``hold.py``)
                   + the best replica's predicted TTFT (``backend_ttft``)

It is refused when a hard cap is hit (``max_queue``, ``max_queue_long``, ``max_wait_s``), when
the prediction passes its deadline (``x-gateway-deadline-ms``), when it passes its TTFT
objective (``objective.py``; critical requests are exempt and are refused only by hard caps),
or when the overload ladder sheds its priority; or it is told to degrade (the ladder's
``degrade`` step). ``refusal`` turns a refused decision into the 503 the client gets, with a
``Retry-After`` of the predicted time until the work ahead has drained.

Then it ``acquire``-s a slot: at once when one is free and nobody waits, otherwise in the
queue (priority, then give-up time, then arrival; short and long lanes). A waiter gives up at
the latest time it can still be dispatched in time (its deadline, or arrival + objective -
predicted replica TTFT) and gets a 503 then, not a timeout. Every waiter is checked again
whenever the prediction changes (``recheck``: a release, a new waiter ahead, a backend going
away): one whose expected dispatch is past its give-up time is refused at once. (Admission
decides on the calibrated, pessimistic wait and the re-check on the expected one: a waiter
is not dropped on the same margin that let it in.)
``Permit.release`` frees the slot, feeds the limit algorithm the backend's latency and the
hold-time estimate the slot's hold time.

With a ``LeaseGate`` (cluster admission), a slot also needs a lease from the gate
(``lease_pump.py``).

Parameters: the pool's ``admission`` settings in the policy.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from gateway.admission.decision import PROBE, AdmissionRequest, Decision, Prediction
from gateway.admission.hold import HoldTimes
from gateway.admission.ladder import Ladder, Signals, step_of, verdict
from gateway.admission.lease_gate import LeaseGate
from gateway.admission.lease_pump import LeasePump
from gateway.admission.limits import build_limit
from gateway.admission.objective import Objective
from gateway.admission.permit import Permit
from gateway.admission.prefill import PrefillBudget
from gateway.admission.queue import AdmissionQueue, Lane, Priority, Ticket
from gateway.admission.refusal_text import refusal_text
from gateway.admission.retry_after import retry_after_s
from gateway.errors import GatewayError, ServiceUnavailable
from gateway.metrics import GatewayMetrics
from gateway.policy.compile import PoolSpec


@dataclass(slots=True)
class _Waiter:
    granted: asyncio.Future[str | None]
    prefill: float
    request: AdmissionRequest
    client_deadline: float | None
    expected_s: float  # uncalibrated wait when it joined (``HoldTimes.expected_s``)


class PoolAdmission:
    def __init__(
        self,
        pool: PoolSpec,
        *,
        clock: Callable[[], float],
        metrics: GatewayMetrics,
        backend_load: Callable[[], tuple[float, float]],
        backend_ttft: Callable[[float], float | None] = lambda tokens: None,
        engine_slots: Callable[[], int | None] = lambda: None,
        leases: LeaseGate | None = None,
    ) -> None:
        self.pool = pool
        self.settings = pool.settings.admission
        self._clock = clock
        self._metrics = metrics
        self._backend_load = backend_load  # (summed waiting, mean KV usage) of the pool
        self._backend_ttft = backend_ttft  # best replica's predicted TTFT for a prompt size
        self._engine_slots = engine_slots  # what the replicas run at once, when known
        self.limit = build_limit(self.settings.limit, pool.capacity)
        self.queue = AdmissionQueue(long_lane_share=self.settings.long_lane_share)
        self.hold = HoldTimes()
        objective = self.settings.objective
        long_from = self.settings.long_prompt_tokens
        self.objective = None if objective is None else Objective.of(objective, long_from)
        self.ladder = Ladder(
            tuple(step_of(s) for s in self.settings.ladder), self.settings.hysteresis
        )
        self.step = 0
        self.inflight = 0
        self.prefill = PrefillBudget(self.settings.max_prefill_tokens)
        self.pump = LeasePump(self, leases)

    @property
    def leases(self) -> LeaseGate | None:
        return self.pump.leases

    @leases.setter
    def leases(self, gate: LeaseGate | None) -> None:
        self.pump.leases = gate

    # the decision

    def predict(self, request: AdmissionRequest) -> Prediction:
        backend = self._backend_ttft(request.prompt_tokens) or 0.0
        slots = self.slots()
        if self._has_free_slot(slots):
            return Prediction(0.0, backend)
        return Prediction(self.hold.wait_s(self._ahead(request), slots, self._clock()), backend)

    def objective_s(self, request: AdmissionRequest) -> float | None:
        if self.objective is None or request.priority is Priority.CRITICAL:
            return None
        return self.objective.seconds(request.prompt_tokens, request.priority)

    def check(self, request: AdmissionRequest) -> Decision:
        """Admit, degrade or refuse, as a value; never waits, counts or raises."""
        prediction = self.predict(request)
        objective = self.objective_s(request)
        reason = self._hard_cap(request) or self._late(request, prediction, objective)
        if reason is not None:
            return Decision(prediction, objective, refuse=reason)
        self._update_step(prediction.wait_s)
        active = [s.action for s in self.ladder.steps[: self.step]]
        outcome = verdict(active, request.priority)
        if outcome == "shed":
            return Decision(prediction, objective, refuse=f"overload_step_{self.step}")
        if outcome == "degrade" and request.degradable and self.settings.degrade_to:
            return Decision(prediction, objective, degrade_to=self.settings.degrade_to)
        return Decision(prediction, objective)

    def refusal(self, request: AdmissionRequest, decision: Decision) -> GatewayError:
        """The error a refused decision becomes (counted as shed)."""
        assert decision.refuse is not None
        return self._refused(request, decision.refuse, decision.prediction)

    # the slot

    async def acquire(self, request: AdmissionRequest, decision: Decision | None = None) -> Permit:
        """A slot, at once or after a wait; raises the refusal when it cannot come in time."""
        start = self._clock()
        tokens = request.prompt_tokens
        if self._has_free_slot(self.slots()):
            self._claim(tokens)
            if self.leases is None:
                return self._permit(request, 0.0)
            lease = await self.pump.lease_now(tokens)
            if lease is not None:
                return self._permit(request, 0.0, lease)
        granted: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        ticket = Ticket(
            priority=request.priority,
            lane=request.lane,
            cost=request.cost,
            deadline=self._give_up_at(request, decision, start),
            enqueued_at=start,
            payload=_Waiter(
                granted, tokens, request, request.deadline, self._expected(request, decision)
            ),
        )
        self.queue.push(ticket)
        self.pump.kick()
        self.recheck()  # it may stand ahead of others now
        try:
            await self._wait(granted, ticket)
        except BaseException:
            self._leave(ticket, granted)
            raise
        queued = self._clock() - start
        self.hold.on_wait(queued, _waiter(ticket).expected_s)
        self._metrics.queue_wait.labels(self.pool.name).observe(queued)
        return self._permit(request, queued, granted.result())

    def release(
        self,
        cost: float,
        latency_s: float | None,
        dropped: bool,
        lease: str | None = None,
        held_s: float | None = None,
    ) -> None:
        self.inflight -= 1
        self.pump.returned(lease)
        self.hold.end(self._clock(), held_s)
        if held_s is not None:
            self.hold.on_release(held_s)
        if latency_s is not None or dropped:
            self.limit.on_sample(
                latency_s=latency_s or 0.0, inflight=self.inflight, dropped=dropped
            )
        self.dispatch()
        self.recheck()
        self._update_step(self.predict(PROBE).wait_s)

    def prefilled(self, tokens: float) -> None:
        self.prefill.done(tokens)
        if self.leases is not None:
            self.pump.kick()
        else:
            self.dispatch()

    def recheck(self) -> None:
        """Refuse, at once, every waiter that can no longer be dispatched in time."""
        if not self.queue:
            return
        now, tickets = self._clock(), self.queue.ordered()
        waits, position = self.hold.expected_waits(len(tickets), self.slots(), now), 0
        for ticket in tickets:
            if ticket.deadline is not None and ticket.priority is not Priority.CRITICAL:
                # Admitted on the calibrated (pessimistic) wait, dropped only when even the
                # expected one is late: it has waited already, and a slot may well come in time.
                wait = waits[position]
                if now + wait > ticket.deadline:
                    # Its whole wait would have been what it waited plus what is still ahead.
                    self.hold.on_wait(now - ticket.enqueued_at + wait, _waiter(ticket).expected_s)
                    self._refuse_waiter(ticket, wait)
                    continue
            position += 1

    # internals

    def slots(self) -> int:
        limit = self.limit.limit
        engines = self._engine_slots()
        if engines is not None:
            limit = min(limit, engines)
        return limit if self.leases is None else min(limit, self.leases.cap(limit))

    def _expected(self, request: AdmissionRequest, decision: Decision | None) -> float:
        """Its uncalibrated wait on joining: the decision's just made, if it had to wait."""
        if decision is not None and decision.prediction.wait_s > 0.0:
            return decision.prediction.wait_s / self.hold.ratio_p90
        return self.hold.expected_s(self._ahead(request), self.slots(), self._clock())

    def _ahead(self, request: AdmissionRequest) -> float:
        return self.queue.count_ahead(request.priority, request.lane)

    def _has_free_slot(self, slots: int) -> bool:
        free = self.inflight < slots and not self.queue and self.prefill.has_room()
        return free and (self.leases is None or self.leases.may_try(self.limit.limit))

    def _claim(self, tokens: float) -> None:
        self.inflight += 1
        self.prefill.start(tokens)
        self.hold.start(self._clock())

    def local_limit(self) -> int:
        return self.limit.limit

    def unclaim(self, tokens: float) -> None:
        self.inflight -= 1
        self.prefill.done(tokens)
        self.hold.end(self._clock(), None)

    def _permit(self, request: AdmissionRequest, queued: float, lease: str | None = None) -> Permit:
        tokens = request.prompt_tokens
        return Permit(self, request.cost, queued, clock=self._clock, lease=lease, prefill=tokens)

    def _give_up_at(
        self, request: AdmissionRequest, decision: Decision | None, now: float
    ) -> float | None:
        """The latest dispatch that still meets the deadline and the objective (the one of
        the ``decision`` that admitted it; without one, only the deadline)."""
        limits = [] if request.deadline is None else [request.deadline]
        if decision is not None and decision.objective_s is not None:
            arrival = request.arrival if request.arrival is not None else now
            limits.append(arrival + decision.objective_s - decision.prediction.backend_s)
        return min(limits, default=None)

    async def _wait(self, granted: asyncio.Future[str | None], ticket: Ticket) -> None:
        if ticket.deadline is None:
            await granted
            return
        try:
            async with asyncio.timeout(max(0.0, ticket.deadline - self._clock())):
                await asyncio.shield(granted)
        except TimeoutError:
            if granted.done() and not granted.cancelled():
                granted.result()  # decided just as time ran out: a slot, or a refusal
                return
            waiter = _waiter(ticket)
            self.hold.on_wait(self._clock() - ticket.enqueued_at, waiter.expected_s)
            position = self.queue.ordered().index(ticket)
            wait = self.hold.wait_s(position, self.slots(), self._clock())
            raise self._late_refusal(ticket, wait) from None

    def _leave(self, ticket: Ticket, granted: asyncio.Future[str | None]) -> None:
        if granted.done() and not granted.cancelled() and granted.exception() is None:
            # The slot came just as the waiter left: hand it on.
            self.prefill.done(_waiter(ticket).prefill)
            self.release(ticket.cost, None, dropped=False, lease=granted.result())
        else:
            self.queue.remove(ticket)
            granted.cancel()

    def dispatch(self) -> None:
        if self.leases is not None:
            return  # the pump dispatches, once the lease is back
        slots = self.slots()  # granting changes who is in flight, not the engines' slots
        while self.inflight < slots and self.prefill.has_room():
            if not self.grant(None):
                return

    def grant(self, lease: str | None) -> bool:
        """Give a slot (and its lease) to the next live waiter; False when nobody waits."""
        while (ticket := self.queue.pop()) is not None:
            waiter = _waiter(ticket)
            if waiter.granted.done():
                continue
            self._claim(waiter.prefill)
            waiter.granted.set_result(lease)
            return True
        return False

    def _refuse_waiter(self, ticket: Ticket, wait: float) -> None:
        waiter = _waiter(ticket)
        self.queue.remove(ticket)
        if not waiter.granted.done():
            waiter.granted.set_exception(self._late_refusal(ticket, wait))

    def _late_refusal(self, ticket: Ticket, wait: float) -> GatewayError:
        """A waiter's refusal: with ``wait`` still to go, it cannot be served in time."""
        waiter = _waiter(ticket)
        prediction = self._after(waiter.request, wait)
        queued = max(0.0, self._clock() - ticket.enqueued_at)
        return self._refused(waiter.request, self._late_reason(ticket), prediction, queued)

    def _late_reason(self, ticket: Ticket) -> str:
        client = _waiter(ticket).client_deadline
        binding = client is not None and ticket.deadline is not None and client <= ticket.deadline
        return "deadline_unmeetable" if binding else "objective_unmeetable"

    def _hard_cap(self, request: AdmissionRequest) -> str | None:
        if self._has_free_slot(self.slots()):
            return None
        if len(self.queue) >= self.settings.max_queue:
            return "queue_full"
        long_depth = self.queue.depth(lane=Lane.LONG)
        if request.lane is Lane.LONG and long_depth >= self.settings.max_queue_long:
            return "long_queue_full"
        return None

    def _late(
        self, request: AdmissionRequest, prediction: Prediction, objective: float | None
    ) -> str | None:
        now = self._clock()
        if request.deadline is not None and now + prediction.ttft_s > request.deadline:
            return "deadline_unmeetable"
        waited = 0.0 if request.arrival is None else max(0.0, now - request.arrival)
        if objective is not None and waited + prediction.ttft_s > objective:
            return "objective_unmeetable"
        cap = self.settings.max_wait_s
        critical = request.priority is Priority.CRITICAL
        if cap is not None and prediction.wait_s > cap and not critical:
            return "wait_too_long"
        return None

    def _update_step(self, wait: float | None) -> None:
        waiting, kv = self._backend_load()
        signals = Signals(len(self.queue), wait, waiting, kv)
        self.step = self.ladder.step(signals, self.step)

    def _after(self, request: AdmissionRequest, wait_s: float) -> Prediction:
        """A waiter's prediction: its remaining wait, then the best replica's TTFT."""
        return Prediction(wait_s, self._backend_ttft(request.prompt_tokens) or 0.0)

    def _refused(
        self, request: AdmissionRequest, reason: str, prediction: Prediction, queued_s: float = 0.0
    ) -> GatewayError:
        name, priority = self.pool.name, request.priority.name.lower()
        self._metrics.shed.labels(name, reason, priority).inc()
        ttft_s = prediction.ttft_s
        retry = retry_after_s(ttft_s)
        self._metrics.retry_after.labels(name).observe(retry)
        return ServiceUnavailable(
            refusal_text(name, reason, request, ttft_s, self.objective_s(request), self._clock()),
            code=reason,
            retry_after_s=retry,
            headers={
                # What the refusal was decided on: the wait for a slot, then the replica.
                "x-gateway-predicted-wait-ms": f"{prediction.wait_s * 1000:.0f}",
                "x-gateway-predicted-ttft-ms": f"{ttft_s * 1000:.0f}",
                # 0: refused at arrival; else how long it waited for a slot first.
                "x-gateway-queue-ms": f"{queued_s * 1000:.0f}",
            },
        )


def _waiter(ticket: Ticket) -> _Waiter:
    waiter = ticket.payload
    assert isinstance(waiter, _Waiter)
    return waiter
