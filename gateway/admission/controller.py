"""Admission for one pool: serve what the fleet can serve, refuse at once what it cannot,
with an honest Retry-After. Enforcement only; the algorithms are the pure modules beside it
(``objective``, ``rules``, ``saturation``, ``hold``, ``queue``, ``waiters``, ``limits``,
``ladder``, ``retry_after``; the replicas' TTFT predictor is ``backends/ttft.py``).
``check`` returns a ``Decision`` (a value; nothing is counted or raised there) on

    predicted TTFT = wait for a slot (0 when one is free; else from its place in the queue
                     and how long slots are held, ``hold.py``)
                   + the best replica's predicted TTFT (``FleetView.ttft``)

refused by a hard cap (``max_queue``, ``max_queue_long``, ``max_wait_s``), by ``rules.py``
(past the deadline; past the objective while the pool is saturated, ``saturation.py``; only
on predictions that rest on observations), or by the overload ladder when the policy has one.
``refusal`` turns it into the client's 503 (``refusal.py``). Then ``acquire`` gives a slot at
once, or after a wait in the queue (priority, give-up time, arrival; short and long lanes);
a waiter gets its 503 at its give-up time (``rules.give_up_at``), not a timeout, and every
waiter is re-checked whenever the prediction changes (``recheck``, ``waiters.due``): on the
expected wait, not the calibrated one that admitted it. ``Permit.release`` frees the slot
and feeds the limit algorithm, the hold times and the completion rate. With a ``LeaseGate``
(cluster admission) a slot also needs a lease (``lease_pump.py``). With ``HostSlots`` the
slots, the queue's evidence and the rates are the host's workers' (``host_slots.py``).
``readmit``: a request taken back from an engine waits again, in its place (deadline,
arrival). Parameters: the pool's ``admission`` settings in the policy.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace

from gateway.admission import rules
from gateway.admission.decision import PROBE, AdmissionRequest, Decision, Prediction
from gateway.admission.fleet import FleetView
from gateway.admission.hold import HoldTimes
from gateway.admission.host_slots import ALONE, HostSlots
from gateway.admission.ladder import Ladder, Signals, step_of, verdict
from gateway.admission.lease_gate import LeaseGate
from gateway.admission.lease_pump import LeasePump
from gateway.admission.limits import build_limit
from gateway.admission.objective import Objective
from gateway.admission.permit import Permit
from gateway.admission.prefill import PrefillBudget
from gateway.admission.queue import AdmissionQueue, Lane, Priority, Ticket
from gateway.admission.refusal import Refused, refusal_error
from gateway.admission.rules import Times, deadline_of, give_up_at, late_reason, wait_cap
from gateway.admission.saturation import PoolState, Saturation, Waiting
from gateway.admission.waiters import Waiter, due, missed, ticket_of, wait_for_slot, waiter_of
from gateway.errors import GatewayError
from gateway.metrics import GatewayMetrics
from gateway.policy.compile import PoolSpec

MIN_RELEASES = 3  # slot holds seen before a predicted wait for a slot is evidence


class PoolAdmission:
    def __init__(
        self,
        pool: PoolSpec,
        *,
        clock: Callable[[], float],
        metrics: GatewayMetrics,
        fleet: FleetView | None = None,
        leases: LeaseGate | None = None,
        host: HostSlots = ALONE,
    ) -> None:
        self.pool = pool
        self.host = host
        self.settings = pool.settings.admission
        self._clock = clock
        self._metrics = metrics
        self.fleet = fleet if fleet is not None else FleetView()
        self.saturation = Saturation()
        self.limit = build_limit(self.settings.limit, pool.capacity)
        self.queue = AdmissionQueue(long_lane_share=self.settings.long_lane_share)
        self.hold = HoldTimes()
        objective, long_from = self.settings.objective, self.settings.long_prompt_tokens
        self.objective = None if objective is None else Objective.of(objective, long_from)
        self._deadline_factor = 3.0 if objective is None else objective.deadline_factor
        steps = tuple(step_of(s) for s in self.settings.ladder)
        self.ladder = Ladder(steps, self.settings.hysteresis)
        self.step, self.inflight = 0, 0
        self.prefill = PrefillBudget(self.settings.max_prefill_tokens)
        self.pump = LeasePump(self, leases)

    def predict(self, request: AdmissionRequest) -> Prediction:
        backend, known = self.fleet.ttft(request.prompt_tokens) or (0.0, False)
        wait = self._slot_wait_s(request)
        supported = known and (wait is None or self._wait_supported())
        return Prediction(wait or 0.0, backend, supported, known)

    def _slot_wait_s(self, request: AdmissionRequest) -> float | None:
        """The wait for a slot alone, without the replicas' (costly) predictions; None: free."""
        free = self._has_free_slot(slots := self.slots())
        return None if free else self.hold.wait_s(self._ahead(request), slots, self._clock())

    def _wait_supported(self) -> bool:
        """A wait for a slot is evidence once slot holds were seen and the slots are limits
        the replicas showed (not probes of their room, which lift within a read)."""
        return self.hold.releases >= MIN_RELEASES and self.fleet.limits_shown()

    def state(self) -> PoolState:
        """Nominal, saturated or overloaded, now (``saturation.py``)."""
        queued = len(self.queue) + self.host.queued() if self.fleet.limits_shown() else 0
        hold, shown = max(self.hold.served_mean_s(self._clock()), 1e-3), self.fleet.slots_shown()
        # The drain: what the replicas have shown they run at once, a probed one's included.
        slots = self.slots() if shown is None else min(self.slots(), shown)
        capacity = slots / hold if self.hold.releases >= MIN_RELEASES else 0.0
        objective, waiting = self.objective_s(PROBE), Waiting(queued, self.fleet.waiting())
        deadline = None if objective is None else self._deadline_factor * objective
        now, sat = self._clock(), self.saturation
        others = self.host.rates(now, sat.arrivals.tau_s)
        return sat.state(now, waiting, self._probe_wait, deadline, capacity, others, self._late)

    def _late(self) -> bool:
        """Whether the backlog is late, on observed waits only: a new standard request's
        slot past its objective, or a waiter ``due`` against its objective."""
        if not self._wait_supported():
            return False
        probe, objective = self._probe_wait(), self.objective_s(PROBE)
        late = probe is not None and objective is not None and probe > objective
        return late or bool(self._due(saturated=True))

    def _due(self, saturated: bool) -> list[tuple[Ticket, float]]:
        now, tickets = self._clock(), self.queue.ordered()
        waits = self.hold.expected_waits(len(tickets), self.slots(), now)
        return due(tickets, waits, now, saturated)

    def publish(self) -> None:
        """Show the host's other workers this pool's queue and rates (``host_slots.py``)."""
        self._show_queue()
        rates = self.saturation.arrivals, self.saturation.completions
        self.host.publish_rates(rates[0].shown(), rates[1].shown())

    def _show_queue(self) -> None:
        self.host.publish_queue(len(self.queue), self.queue.head())

    def _probe_wait(self) -> float | None:
        return probe.wait_s if (probe := self.predict(PROBE)).supported else None

    def arrived(self, prompt_tokens: float) -> None:
        """A request of so many prompt tokens asked this pool (``state``, ``fleet.asked``)."""
        self.saturation.arrived(self._clock())
        self.fleet.asked(prompt_tokens)

    def objective_s(self, request: AdmissionRequest) -> float | None:
        if self.objective is None or request.priority is Priority.CRITICAL:
            return None
        return self.objective.seconds(request.prompt_tokens, request.priority)

    def check(self, request: AdmissionRequest) -> Decision:
        """Admit, degrade or refuse, as a value; never waits, counts or raises."""
        now = self._clock()
        prediction = self.predict(request)
        objective = self.objective_s(request)
        times = deadline_of(request, objective, self._deadline_factor, now)
        state = self.state()
        decided = Decision(
            prediction, objective, deadline=times.deadline, saturated=state.saturated
        )
        reason = (
            self._queue_cap(request)
            or late_reason(request, prediction, times, state, now)
            or wait_cap(self.settings.max_wait_s, request, prediction.wait_s)
        )
        if reason is not None:
            return replace(decided, refuse=reason)
        self._update_step(prediction.wait_s)
        active = [s.action for s in self.ladder.steps[: self.step]]
        outcome = verdict(active, request.priority)
        if outcome == "shed":
            return replace(decided, refuse=f"overload_step_{self.step}")
        if outcome == "degrade" and request.degradable and self.settings.degrade_to:
            return replace(decided, degrade_to=self.settings.degrade_to)
        return decided

    def refusal(self, request: AdmissionRequest, decision: Decision) -> GatewayError:
        """The error a refused decision becomes (counted as shed)."""
        assert decision.refuse is not None
        return self._refused(request, decision.refuse, decision.prediction, decision.deadline)

    async def acquire(self, request: AdmissionRequest, decision: Decision | None = None) -> Permit:
        """A slot, at once or after a wait; raises the refusal when it cannot come in time."""
        start, tokens = self._clock(), request.prompt_tokens
        with self.host.locked():  # siblings take slots too: check and take at once
            free = self._has_free_slot(self.slots())
            if free:
                self._claim(tokens)
        if free:
            if self.pump.leases is None:
                return self._permit(request, 0.0)
            lease = await self.pump.lease_now(tokens)
            if lease is not None:
                return self._permit(request, 0.0, lease)
        granted: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        times, backend_s = self._times(request, decision, start)
        expected = self._expected(request, decision)
        ticket = ticket_of(Waiter(granted, tokens, request, times, backend_s, expected), start)
        self.queue.push(ticket)
        self._show_queue()  # siblings' releases must reach it
        self.pump.kick()
        self.dispatch()  # a slot given back by a request readmitted goes to the queue's head
        self.recheck()  # it may stand ahead of others now
        try:
            await wait_for_slot(granted, ticket, self._clock, self._gave_up)
        except BaseException:
            self._leave(ticket, granted)
            raise
        queued = self._clock() - start
        self.hold.on_wait(queued, waiter_of(ticket).expected_s)
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
        self.host.publish_held(self.inflight)
        self.pump.returned(lease)
        self.saturation.completed(self._clock())
        self.hold.end(self._clock(), held_s)
        if held_s is not None:
            self.hold.on_release(held_s)
        if latency_s is not None or dropped:
            sample = latency_s or 0.0
            self.limit.on_sample(latency_s=sample, inflight=self.inflight, dropped=dropped)
        self.dispatch()
        self.recheck()
        self._update_step(self._slot_wait_s(PROBE) or 0.0)

    def prefilled(self, tokens: float) -> None:
        self.prefill.done(tokens)
        if self.pump.leases is not None:
            self.pump.kick()
        else:
            self.dispatch()

    async def readmit(
        self, request: AdmissionRequest, tokens: float, lease: str | None, held_s: float
    ) -> Permit:
        """Taken back from an engine's queue: the slot back unused, a wait in its place."""
        self.unclaim(tokens, held_s)
        self.pump.returned(lease)
        return await self.acquire(request)

    def give_up(self, request: AdmissionRequest) -> float | None:
        """The latest first token that helps ``request``: when a waiter gives up, by now."""
        return give_up_at(self._times(request, None, self._clock())[0], 0.0, self.state().saturated)

    def recheck(self) -> None:
        """Refuse, at once, every waiter that can no longer be dispatched in time (on a wait
        that rests on observations: a guess refuses nobody, ``_wait_supported``)."""
        if not self.queue or not self._wait_supported():
            return
        # Admitted on the calibrated (pessimistic) wait, dropped only when even the expected
        # one is late: it has waited already, and a slot may well come in time.
        for ticket, wait in self._due(self.state().saturated):
            # Its whole wait would have been what it waited plus what is still ahead.
            waited = self._clock() - ticket.enqueued_at
            self.hold.on_wait(waited + wait, waiter_of(ticket).expected_s)
            self._refuse_waiter(ticket, wait)

    def slots(self) -> int:
        limit = self.limit.limit
        engines = self.fleet.slots()
        if engines is not None:
            limit = min(limit, engines)
        return limit if self.pump.leases is None else min(limit, self.pump.leases.cap(limit))

    def _expected(self, request: AdmissionRequest, decision: Decision | None) -> float:
        """Its uncalibrated wait on joining: the decision's just made, if it had to wait."""
        if decision is not None and decision.prediction.wait_s > 0.0:
            return decision.prediction.wait_s / self.hold.ratio_p90
        return self.hold.expected_s(self._ahead(request), self.slots(), self._clock())

    def _ahead(self, request: AdmissionRequest) -> float:
        return self.queue.count_ahead(request.priority, request.lane)

    def _has_free_slot(self, slots: int) -> bool:
        held = self.inflight + self.host.held()
        waiting = self.queue or self.host.queued()  # the host's queue goes first
        free = held < slots and not waiting and self.prefill.has_room()
        return free and (self.pump.leases is None or self.pump.leases.may_try(self.limit.limit))

    def _claim(self, tokens: float) -> None:
        self.inflight += 1
        self.host.publish_held(self.inflight)
        self.prefill.start(tokens)
        self.hold.start(self._clock())

    def local_limit(self) -> int:
        return self.limit.limit

    def unclaim(self, tokens: float, held_s: float | None = None) -> None:
        self.inflight -= 1
        self.host.publish_held(self.inflight)
        self.prefill.done(tokens)
        self.hold.end(self._clock(), held_s)

    def _permit(self, request: AdmissionRequest, queued: float, lease: str | None = None) -> Permit:
        return Permit(self, request, queued, clock=self._clock, lease=lease)

    def _times(
        self, request: AdmissionRequest, decision: Decision | None, now: float
    ) -> tuple[Times, float]:
        """A waiter's limits and its replica's predicted TTFT; 0 if a guess (no sooner give-up)."""
        if decision is None:
            objective = self.objective_s(request)
            backend, known = self.fleet.ttft(request.prompt_tokens) or (0.0, False)
        else:
            prediction, objective = decision.prediction, decision.objective_s
            backend, known = prediction.backend_s, prediction.backend_supported
        times = deadline_of(request, objective, self._deadline_factor, now)
        return times, backend if known else 0.0

    def _gave_up(self, ticket: Ticket) -> GatewayError:
        """A waiter's refusal at its give-up time, with the wait it still had ahead."""
        self.hold.on_wait(self._clock() - ticket.enqueued_at, waiter_of(ticket).expected_s)
        position = self.queue.ordered().index(ticket)
        return self._late_refusal(ticket, self.hold.wait_s(position, self.slots(), self._clock()))

    def _leave(self, ticket: Ticket, granted: asyncio.Future[str | None]) -> None:
        if granted.done() and not granted.cancelled() and granted.exception() is None:
            # The slot came just as the waiter left: hand it on.
            self.prefill.done(waiter_of(ticket).prefill)
            self.release(ticket.cost, None, dropped=False, lease=granted.result())
        else:
            self.queue.remove(ticket)
            granted.cancel()
            self._show_queue()

    def dispatch(self) -> None:
        if self.pump.leases is not None or not self.queue:
            return  # the pump dispatches, once the lease is back; or nobody waits (most calls)
        slots = self.slots()  # granting changes who is in flight, not the engines' slots
        with self.host.locked():
            while self.inflight + self.host.held() < slots and self.prefill.has_room():
                # A sibling's first waiter stands ahead: the slot is its (its tick takes it).
                if self.host.ahead(self.queue.head()) or not self.grant(None):
                    break
        self._show_queue()

    def grant(self, lease: str | None) -> bool:
        """Give a slot (and its lease) to the next live waiter; False when nobody waits."""
        for late in self.queue.expired(self._clock()):  # past its give-up time: refused
            self._refuse_waiter(late, 0.0)
        saturated = bool(self.queue) and self.state().saturated  # read before any leaves
        while (ticket := self.queue.pop()) is not None:
            waiter = waiter_of(ticket)
            if waiter.granted.done():
                continue
            if saturated and missed(ticket, self._clock()):  # its objective passed: refused
                waiter.granted.set_exception(self._late_refusal(ticket, 0.0))
                continue
            self._claim(waiter.prefill)
            waiter.granted.set_result(lease)
            return True
        return False

    def _refuse_waiter(self, ticket: Ticket, wait: float) -> None:
        waiter = waiter_of(ticket)
        self.queue.remove(ticket)
        self._show_queue()
        if not waiter.granted.done():
            waiter.granted.set_exception(self._late_refusal(ticket, wait))

    def _late_refusal(self, ticket: Ticket, wait: float) -> GatewayError:
        """A waiter's refusal: with ``wait`` still to go, it cannot be served in time."""
        waiter = waiter_of(ticket)
        prediction = Prediction(wait, (self.fleet.ttft(waiter.request.prompt_tokens) or (0.0,))[0])
        queued = max(0.0, self._clock() - ticket.enqueued_at)
        reason = waiter.missed(self._clock(), wait)
        return self._refused(waiter.request, reason, prediction, waiter.times.deadline, queued)

    def _queue_cap(self, request: AdmissionRequest) -> str | None:
        if self._has_free_slot(self.slots()):
            return None
        queued, long_depth = len(self.queue) + self.host.queued(), self.queue.depth(Lane.LONG)
        return rules.queue_cap(self.settings, request.lane, queued, long_depth)  # the host's queue

    def _update_step(self, wait: float | None) -> None:
        waiting, kv = self.fleet.load()
        self.step = self.ladder.step(Signals(len(self.queue), wait, waiting, kv), self.step)

    def _refused(
        self,
        request: AdmissionRequest,
        reason: str,
        prediction: Prediction,
        deadline: float | None,
        queued_s: float = 0.0,
    ) -> GatewayError:
        objective, now = self.objective_s(request), self._clock()
        refused = Refused.of(self.pool.name, request, reason, prediction, now, objective)
        return refusal_error(refused.limits(deadline, queued_s), self._metrics)
