"""SLO-first admission, decision by decision, on a manual clock (no servers, no sleeps).

A pool of ``slots`` slots whose replica is predicted to answer in ``backend_s``. Below
saturation a request is refused only past its deadline (3x its 2 s objective by default):
one that will be somewhat late is served. Once work waits and arrives faster than the pool
drains it (a burst does that), requests are admitted while their predicted TTFT meets the
objective, refused at once (503, Retry-After from the prediction) otherwise, and refused
later as soon as the prediction says they can no longer make it. Predictions that do not
rest on observations (no slot hold seen yet) refuse nothing."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from gateway.admission.controller import MIN_RELEASES, PoolAdmission
from gateway.admission.decision import AdmissionRequest
from gateway.admission.fleet import FleetView
from gateway.admission.permit import Permit
from gateway.admission.queue import Lane, Priority
from gateway.admission.saturation import State
from gateway.errors import GatewayError
from tests.support.waiting import until
from tests.unit.admission.pools import Clock, pool_admission


def _pool(slots: int, clock: Clock, backend_s: float = 0.1, admission: str = "{}") -> PoolAdmission:
    return pool_admission(slots=slots, clock=clock, admission=admission, backend_s=backend_s)


def _req(
    clock: Clock,
    priority: Priority = Priority.STANDARD,
    deadline_ms: int | None = None,
    prompt_tokens: float = 100.0,
) -> AdmissionRequest:
    deadline = None if deadline_ms is None else clock.now + deadline_ms / 1000
    lane = Lane.LONG if prompt_tokens >= 2000 else Lane.SHORT
    return AdmissionRequest(
        priority, lane, prompt_tokens + 256, deadline, False, prompt_tokens, arrival=clock.now
    )


class Burst:
    """Requests sent at once, each checked and then (if admitted) queued in its own task,
    with no pause between the two, as the admission stage does."""

    def __init__(self, pool: PoolAdmission) -> None:
        self.pool = pool
        self.refused: list[GatewayError] = []  # at arrival
        self.tasks: list[asyncio.Task[Permit]] = []

    def send(self, request: AdmissionRequest) -> None:
        self.pool.arrived(request.prompt_tokens)  # as the admission stage counts it
        self.tasks.append(asyncio.create_task(self._one(request)))

    async def _one(self, request: AdmissionRequest) -> Permit:
        decision = self.pool.check(request)
        if decision.refuse is not None:
            error = self.pool.refusal(request, decision)
            self.refused.append(error)
            raise error
        return await self.pool.acquire(request, decision)

    def granted(self) -> list[Permit]:
        return [t.result() for t in self.tasks if t.done() and t.exception() is None]

    def failed(self) -> list[BaseException]:
        """Refused while waiting (not at arrival)."""
        return [
            e
            for t in self.tasks
            if t.done() and (e := t.exception()) is not None and e not in self.refused
        ]

    def waiting(self) -> int:
        return sum(not t.done() for t in self.tasks)

    def decided(self) -> bool:
        """Every request was refused or granted, or waits in the pool's queue."""
        return sum(t.done() for t in self.tasks) + len(self.pool.queue) == len(self.tasks)

    def cancel(self) -> None:
        for task in self.tasks:
            task.cancel()


def _release_all(permits: Iterator[Permit] | list[Permit], clock: Clock, held_s: float) -> None:
    clock.now += held_s
    for permit in permits:
        permit.release(latency_s=0.1, dropped=False)


async def _teach_hold(pool: PoolAdmission, clock: Clock, held_s: float) -> None:
    """Requests one after another, each holding its slot ``held_s``: the pool's sampled
    holds, enough of them for its waits to be evidence (``MIN_RELEASES``)."""
    for _ in range(MIN_RELEASES):
        first = Burst(pool)
        first.send(_req(clock))
        await until(first.decided)
        _release_all(first.granted(), clock, held_s)


def _rush(pool: PoolAdmission, requests: int = 20) -> None:
    """Many requests asked the pool just now (a burst, as far as its arrival rate goes)."""
    for _ in range(requests):
        pool.arrived(100.0)


def _saturated(clock: Clock, backend_s: float, admission: str = "{}") -> PoolAdmission:
    """A pool whose engines report requests waiting inside them, asked faster than it
    drains: saturated."""
    fleet = FleetView(ttft=lambda tokens: (backend_s, True), waiting=lambda: 3.0)
    pool = pool_admission(slots=2, clock=clock, admission=admission, fleet=fleet)
    for _ in range(4):
        pool.arrived(100.0)
    assert pool.state().state is State.SATURATED
    return pool


# (predicted TTFT at the replica, prompt tokens, pool saturated) -> refusal (None: admitted)
FREE_SLOT: dict[str, tuple[float, float, bool, str | None]] = {
    "a fast replica": (0.1, 100, False, None),
    "late but served below saturation": (2.5, 100, False, None),
    "past the deadline (3 x 2 s), useless": (6.5, 100, False, "deadline_unmeetable"),
    "fast, saturated": (1.9, 100, True, None),
    "past the objective, saturated": (2.5, 100, True, "objective_unmeetable"),
    "a long prompt's objective is longer (3 s), saturated": (2.5, 3000, True, None),
}  # fmt: skip


@pytest.mark.parametrize(
    ("backend_s", "tokens", "saturated", "refuse"), FREE_SLOT.values(), ids=FREE_SLOT.keys()
)
async def test_a_late_request_is_served_below_saturation_and_refused_in_it(
    backend_s: float, tokens: float, saturated: bool, refuse: str | None
) -> None:
    clock = Clock(1000.0)
    pool = _saturated(clock, backend_s) if saturated else _pool(2, clock, backend_s)
    decision = pool.check(_req(clock, prompt_tokens=tokens))
    assert decision.refuse == refuse
    assert decision.saturated is saturated


async def test_a_prediction_that_rests_on_no_observation_refuses_nothing() -> None:
    clock = Clock(1000.0)
    fleet = FleetView(ttft=lambda tokens: (9.0, False), waiting=lambda: 3.0)
    pool = pool_admission(slots=2, clock=clock, fleet=fleet)
    for _ in range(4):
        pool.arrived(100.0)
    assert pool.state().saturated
    decision = pool.check(_req(clock))  # past the deadline and the objective, but a guess
    assert (decision.refuse, decision.prediction.supported) == (None, False)


async def test_a_cold_burst_after_holds_were_seen_is_answered_at_arrival() -> None:
    # 2 slots held 1.5 s each: a queued request waits 1.5 s per place ahead (+0.1 s at the
    # replica); the burst saturates the pool at once, and what cannot make its 2 s is
    # refused at arrival, not left to time out.
    clock = Clock(1000.0)
    pool = _pool(2, clock)
    await _teach_hold(pool, clock, 1.5)
    clock.now += 60.0  # idle: the pool keeps what it learned
    burst = Burst(pool)
    for _ in range(300):
        burst.send(_req(clock))
    await until(burst.decided)
    assert (len(burst.granted()), burst.waiting(), len(burst.refused)) == (2, 2, 296)
    assert {e.http_status() for e in burst.refused} == {503}
    assert {e.code for e in burst.refused} == {"objective_unmeetable"}
    burst.cancel()


async def test_a_cold_burst_with_nothing_seen_waits_for_evidence_then_is_refused() -> None:
    # Nothing ever completed: how long a slot is held is unknown, so nobody is refused on a
    # guess; as soon as releases show it, the waiters that can no longer make their
    # objective are refused, each by its deadline.
    clock = Clock(1000.0)
    pool = _pool(2, clock)
    burst = Burst(pool)
    for _ in range(300):
        burst.send(_req(clock))
    await until(burst.decided)
    assert (len(burst.granted()), burst.waiting(), burst.refused) == (2, 298, [])
    released: list[Permit] = []
    for _ in range(2):  # two rounds of holds of 0.8 s: four releases seen
        granted = [p for p in burst.granted() if p not in released]
        _release_all(granted, clock, 0.8)
        released += granted
        await until(burst.decided)
    late = burst.failed()
    assert len(late) == 295  # all but the 5 given a slot (the third release refuses)
    assert {getattr(e, "code", None) for e in late} == {"objective_unmeetable"}
    assert {e.response_headers()["x-gateway-queue-ms"] for e in late} == {"1600"}  # type: ignore[attr-defined]
    burst.cancel()


@pytest.mark.parametrize(("slots", "hold_s", "queued"), [(2, 0.6, 6), (2, 0.4, 8), (4, 0.6, 12)])
async def test_after_learning_the_hold_time_the_queue_takes_what_fits(
    slots: int, hold_s: float, queued: int
) -> None:
    clock = Clock(1000.0)
    pool = _pool(slots, clock)
    for _ in range(2):
        burst = Burst(pool)
        for _ in range(slots):
            burst.send(_req(clock))
        await until(burst.decided)
        _release_all(burst.granted(), clock, hold_s)  # the pool learns its hold time
    burst = Burst(pool)
    for _ in range(100):
        burst.send(_req(clock))
    await until(burst.decided)
    # every slot was just taken: position k waits (k // slots + 1) * hold; with 0.1 s at the
    # replica, k fits while (k // slots + 1) * hold + 0.1 <= 2.
    assert len(burst.granted()) == slots
    assert burst.waiting() == queued
    assert len(burst.refused) == 100 - slots - queued
    burst.cancel()


async def test_an_idle_pool_does_not_read_as_stalled() -> None:
    clock = Clock(1000.0)
    pool = _pool(2, clock)
    first = Burst(pool)
    for _ in range(2):
        first.send(_req(clock))
    await until(first.decided)
    _release_all(first.granted(), clock, 0.4)
    clock.now += 35.0  # nothing at all for 35 s
    burst = Burst(pool)
    for _ in range(6):
        burst.send(_req(clock))
    await until(burst.decided)
    assert burst.refused == []
    assert len(burst.granted()) == 2
    assert burst.waiting() == 4
    burst.cancel()


async def test_deadline_that_cannot_be_met_is_refused_at_arrival() -> None:
    clock = Clock(1000.0)
    pool = _pool(2, clock)
    await _teach_hold(pool, clock, 1.0)
    burst = Burst(pool)
    for _ in range(12):
        burst.send(_req(clock, deadline_ms=500))
    await until(burst.decided)
    assert len(burst.granted()) == 2
    assert len(burst.refused) == 10
    assert {e.code for e in burst.refused} == {"deadline_unmeetable"}
    burst.cancel()


async def test_waiters_are_refused_as_soon_as_the_prediction_says_they_are_late() -> None:
    clock = Clock(1000.0)
    pool = _pool(2, clock)
    for _ in range(2):
        burst = Burst(pool)
        for _ in range(2):
            burst.send(_req(clock))
        await until(burst.decided)
        _release_all(burst.granted(), clock, 0.5)  # hold 0.5 s: a waiter waits 0.25 s each
    _rush(pool)
    burst = Burst(pool)
    for _ in range(8):
        burst.send(_req(clock))
    await until(burst.decided)
    assert (len(burst.granted()), burst.waiting(), len(burst.refused)) == (2, 6, 0)
    # One request held its slot for 3 s: the sampled holds (and so every waiter's wait)
    # grow; the ones that can no longer make their 2 s are refused at this very release.
    permits = burst.granted()
    clock.now += 3.0
    permits[0].release(latency_s=0.1, dropped=False)
    await until(burst.decided)
    late = burst.failed()
    assert late
    assert {getattr(e, "code", None) for e in late} == {"objective_unmeetable"}
    assert all(isinstance(e, GatewayError) and e.http_status() == 503 for e in late)
    assert len(pool.queue) == burst.waiting()
    burst.cancel()


async def test_a_waiter_is_admitted_on_the_calibrated_wait_and_dropped_on_the_expected() -> None:
    clock = Clock(1000.0)
    pool = _pool(1, clock)
    await _teach_hold(pool, clock, 0.5)  # hold 0.5 s; one slot
    pool.hold.ratio_p90 = 1.5  # past waits ran up to 1.5x the expected ones
    _rush(pool)
    burst = Burst(pool)
    for _ in range(4):  # the slot, then waits expected 0.5 / 1.0 / 1.5 s, calibrated x1.5
        burst.send(_req(clock))
    await until(burst.decided)
    assert (burst.waiting(), len(burst.refused)) == (2, 1)  # 1.5 x 1.5 + 0.1 > 2 s: refused
    start = clock.now
    # The slot's holder runs long: past every hold seen, it is expected to run as long again.
    # 0.6 s on, the second waiter's expected wait (0.6 + 0.5 s) still fits its 1.9 s, its
    # calibrated one (x1.5) does not: it keeps its place.
    clock.now = start + 0.6
    pool.recheck()
    await until(burst.decided)
    assert (burst.waiting(), burst.failed()) == (2, [])
    clock.now = start + 0.75  # 0.75 + 0.75 + 0.5 s: now even the expected wait is late
    pool.recheck()
    await until(burst.decided)
    assert burst.waiting() == 1
    late = burst.failed()
    assert [getattr(e, "code", None) for e in late] == ["objective_unmeetable"]
    # The client can tell a refusal after a wait from one at arrival.
    assert isinstance(late[0], GatewayError)
    assert late[0].response_headers()["x-gateway-queue-ms"] == "750"
    assert burst.refused[0].response_headers()["x-gateway-queue-ms"] == "0"
    burst.cancel()


async def test_a_critical_arrival_pushes_a_waiter_past_its_objective() -> None:
    clock = Clock(1000.0)
    pool = _pool(1, clock)
    await _teach_hold(pool, clock, 0.5)
    burst = Burst(pool)
    for _ in range(4):  # 1 slot + 3 waiting at 0.5, 1.0, 1.5 s (+0.1 s at the replica)
        burst.send(_req(clock))
    await until(burst.decided)
    assert (burst.waiting(), burst.failed()) == (3, [])
    for _ in range(2):
        burst.send(_req(clock, Priority.CRITICAL))  # critical: queued whatever the wait
    await until(burst.decided)
    failed = burst.failed()
    # The standard waiters are now 3rd to 5th: dispatched 1.5, 2.0 and 2.5 s from now, and
    # each must be by 1.9 s (2 s objective, 0.1 s at the replica): the last two cannot.
    assert len(failed) == 2
    assert {getattr(e, "code", None) for e in failed} == {"objective_unmeetable"}
    burst.cancel()


async def test_critical_requests_are_refused_only_by_hard_caps() -> None:
    clock = Clock(1000.0)
    pool = _pool(1, clock, backend_s=10.0, admission="{max_queue: 3}")
    burst = Burst(pool)
    for _ in range(6):
        burst.send(_req(clock, Priority.CRITICAL))
    await until(burst.decided)
    assert len(burst.granted()) == 1
    assert burst.waiting() == 3
    assert [e.code for e in burst.refused] == ["queue_full", "queue_full"]
    burst.cancel()


@pytest.mark.parametrize(("hold_s", "waiting", "retry_after"), [(1.0, 3, "5"), (4.0, 1, "9")])
async def test_retry_after_is_the_predicted_time_not_a_constant(
    hold_s: float, waiting: int, retry_after: str
) -> None:
    clock = Clock(1000.0)
    pool = _pool(1, clock, admission="{objective: {ttft_s: 30, priority: {sheddable: 1}}}")
    await _teach_hold(pool, clock, hold_s)
    burst = Burst(pool)
    for _ in range(1 + waiting):
        burst.send(_req(clock))
    await until(burst.decided)
    # Too late for a sheddable request's 1 s: the refusal says when the work ahead of it will
    # have drained ((waiting + 1) x hold + 0.1 s at the replica, rounded up).
    request = _req(clock, Priority.SHEDDABLE)
    decision = pool.check(request)
    assert decision.refuse is not None
    error = pool.refusal(request, decision)
    assert error.response_headers()["retry-after"] == retry_after
    burst.cancel()


@pytest.mark.parametrize(
    ("max_inflight", "engine_slots", "slots"),
    [(64, None, 64), (64, 8, 8), (4, 8, 4)],  # the smaller of the hard limit and the engines
)
async def test_the_gateway_queues_beyond_what_the_engines_run(
    max_inflight: int, engine_slots: int | None, slots: int
) -> None:
    clock = Clock()
    pool = pool_admission(
        slots=max_inflight, clock=clock, backend_s=0.1, engine_slots=lambda: engine_slots
    )
    await _teach_hold(pool, clock, 0.5)  # held 0.5 s: a waiter's wait fits
    burst = Burst(pool)
    for _ in range(slots + 1):
        burst.send(_req(clock))
    await until(burst.decided)
    assert (len(burst.granted()), burst.waiting()) == (slots, 1)
    burst.cancel()


async def test_requests_sent_before_the_engines_were_known_stand_ahead_of_waiters() -> None:
    clock = Clock()
    learned: list[int | None] = [None]
    pool = pool_admission(slots=64, clock=clock, backend_s=0.1, engine_slots=lambda: learned[0])
    await _teach_hold(pool, clock, 1.0)  # requests hold their slot 1 s
    burst = Burst(pool)
    for _ in range(5):  # one every 0.1 s: 0.5 s to 0.9 s left
        burst.send(_req(clock))
        await until(burst.decided)
        clock.now += 0.1
    learned[0] = 4  # the engines turn out to run 4: the fifth queues inside them
    # 5 in flight on 4 slots: a new request waits for the second release, not the first.
    prediction = pool.predict(_req(clock))
    assert prediction.wait_s == pytest.approx(0.6, rel=0.05)  # on the grid of hold.py
    burst.cancel()


async def test_a_refusal_says_what_it_was_decided_on() -> None:
    clock = Clock()
    pool = _saturated(clock, backend_s=2.5)
    request = _req(clock)
    clock.now += 0.2  # it spent 0.2 s in the gateway before this decision
    decision = pool.check(request)
    error = pool.refusal(request, decision)
    assert decision.refuse == "objective_unmeetable"
    assert error.message.endswith(
        "predicted first token at 2.7 s, past the 2.0 s objective; 0.2 s already spent here."
    )
    headers = error.response_headers()
    assert headers["x-gateway-predicted-wait-ms"] == "0"
    assert headers["x-gateway-predicted-ttft-ms"] == "2500"
    assert headers["x-gateway-queue-ms"] == "0"
    assert headers["retry-after"] == "3"


# (a burst saturates the pool) -> (waiters refused, waiters served): the two waiters' objectives
# passed while the slot's holder ran long; when it comes back, a saturated pool refuses them
# rather than serve them late; a nominal one serves the first late (within its deadline)
LATE_AT_DISPATCH = {"saturated": (True, 2, 0), "nominal": (False, 0, 1)}


@pytest.mark.parametrize(
    ("saturated", "refused", "served"), LATE_AT_DISPATCH.values(), ids=LATE_AT_DISPATCH.keys()
)
async def test_a_waiter_whose_objective_passed_in_a_saturated_pool_is_refused_at_dispatch(
    saturated: bool, refused: int, served: int
) -> None:
    clock = Clock(1000.0)
    pool = _pool(1, clock)
    await _teach_hold(pool, clock, 0.5)
    burst = Burst(pool)
    for _ in range(3):  # the slot, then two waiters expected within their 2 s
        burst.send(_req(clock))
    await until(burst.decided)
    assert (len(burst.granted()), burst.waiting(), len(burst.refused)) == (1, 2, 0)
    clock.now += 2.5  # the holder runs long: both waiters' objectives pass
    if saturated:
        _rush(pool)
    assert pool.state().saturated is saturated
    burst.granted()[0].release(latency_s=0.1, dropped=False)
    await until(burst.decided)
    late = burst.failed()
    assert [getattr(e, "code", None) for e in late] == ["objective_unmeetable"] * refused
    assert len(burst.granted()) == 1 + served
    burst.cancel()


async def test_a_bursts_late_backlog_keeps_the_pool_saturated_after_arrivals_stop() -> None:
    clock = Clock(1000.0)
    pool = _pool(1, clock)
    await _teach_hold(pool, clock, 0.5)
    _rush(pool)
    burst = Burst(pool)
    for _ in range(3):
        burst.send(_req(clock))
    await until(burst.decided)
    assert pool.state().saturated
    assert burst.waiting() == 2
    # 5 s on, the burst's arrivals have decayed below the drain; its waiters are past their
    # objective: the pool stays saturated (it refuses them at the next release, above).
    clock.now += 5.0
    assert pool.saturation.arrivals.read(clock.now) < 2.0  # below 1.1x the drain of 2/s
    assert pool.state().saturated
    burst.cancel()
    await until(lambda: not pool.queue)
    assert not pool.state().saturated  # nothing waits: nominal


# id -> (limits shown, what the replicas have shown they run at once, arrivals at once) ->
# saturated. Eight slots held 3 s each drain 2.7/s; one request waits inside an engine.
# Before, a replica still probed left the drain to the completions alone (none lately), so
# a clump of a 1x burst read as saturation.
SHOWN: dict[str, tuple[bool, int | None, int, bool]] = {
    "limits shown, a clump of 1x (4/s)": (True, None, 8, False),
    "one replica probed, 7 shown, a clump of 1x": (False, 7, 8, False),
    "one replica probed, 7 shown, 3x (7/s)": (False, 7, 14, True),
    "probed, nothing shown yet to count on": (False, 0, 8, True),
}  # fmt: skip


@pytest.mark.parametrize(
    ("limits", "shown", "arrivals", "saturated"), SHOWN.values(), ids=SHOWN.keys()
)
async def test_the_drain_counts_what_the_replicas_have_shown_they_run(
    limits: bool, shown: int | None, arrivals: int, saturated: bool
) -> None:
    clock = Clock(1000.0)
    fleet = FleetView(
        ttft=lambda tokens: (0.1, True),
        slots=lambda: 8,
        limits_shown=lambda: limits,
        slots_shown=lambda: shown,
        waiting=lambda: 1.0,
    )
    pool = pool_admission(slots=8, clock=clock, fleet=fleet)
    await _teach_hold(pool, clock, 3.0)
    clock.now += 30.0  # the completions' rate has decayed to nothing
    _rush(pool, arrivals)
    assert pool.state().saturated is saturated


# id -> whether the replicas' caps are limits they showed -> the refusal of a request whose
# wait for a slot is past its deadline. The 200-user ramp: a batch seen full in one read (a
# burst's prefills behind one step's budget) capped the engine at 104, and waits behind it
# (6.5 s predicted) refused users who would have waited 1.3 s once the next read lifted it.
WAIT_SUPPORT: dict[str, tuple[bool, str | None]] = {
    "limits shown (the policy's, or a batch read twice): refused past the deadline": (
        True, "deadline_unmeetable"),
    "a probe, or a batch seen in one read only: a guess, admitted": (False, None),
}  # fmt: skip


@pytest.mark.parametrize(("limits", "refused"), WAIT_SUPPORT.values(), ids=WAIT_SUPPORT.keys())
async def test_a_slot_wait_refuses_only_behind_limits_the_replicas_showed(
    limits: bool, refused: str | None
) -> None:
    clock = Clock(1000.0)
    fleet = FleetView(ttft=lambda tokens: (0.1, True), slots=lambda: 2, limits_shown=lambda: limits)
    pool = pool_admission(slots=2, clock=clock, fleet=fleet)
    await _teach_hold(pool, clock, 3.0)
    burst = Burst(pool)
    for _ in range(6):  # two hold the slots for 3 s, four wait ahead
        burst.send(_req(clock, priority=Priority.CRITICAL))
    await until(burst.decided)
    decision = pool.check(_req(clock))
    assert decision.prediction.wait_s > 6.0  # past the deadline: 3x the 2 s objective
    assert decision.refuse == refused
    burst.cancel()


# id -> the replica's predicted TTFT and whether it rests on observations -> (refused, still
# waiting for its slot a few loop turns later). No slot hold seen yet: the wait itself is no
# evidence, so both are admitted. The 200-user ramp: a request
# admitted on a guess of 6 s (its features beyond what the predictor had seen) gave up its
# wait 12 ms after it joined, deadline_unmeetable: its give-up time is its deadline minus
# its replica's TTFT, and the guess took it to the past.
GUESS: dict[str, tuple[float, bool, tuple[int, int]]] = {
    "observed 6.5 s: its give-up time (6 s deadline - 6.5 s) passed, refused": (
        6.5, True, (1, 0)),
    "a guess of 6.5 s: admitted, and it waits for its slot": (6.5, False, (0, 1)),
}  # fmt: skip


@pytest.mark.parametrize(("backend_s", "known", "outcome"), GUESS.values(), ids=GUESS.keys())
async def test_a_guess_does_not_bring_a_waiters_give_up_time_forward(
    backend_s: float, known: bool, outcome: tuple[int, int]
) -> None:
    clock = Clock(1000.0)
    fleet = FleetView(ttft=lambda tokens: (backend_s, known), slots=lambda: 1)
    pool = pool_admission(slots=1, clock=clock, fleet=fleet)
    holder = Burst(pool)
    holder.send(_req(clock, priority=Priority.CRITICAL))
    await until(holder.decided)
    burst = Burst(pool)
    burst.send(_req(clock))
    await until(burst.decided)
    for _ in range(20):  # a give-up time already past fires within a turn or two
        await asyncio.sleep(0)
    assert (len(burst.refused + burst.failed()), burst.waiting()) == outcome
    burst.cancel()
    holder.cancel()
