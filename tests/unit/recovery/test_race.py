"""The first-token race, driven by hand: attempts are futures the test resolves, the clock is
injected, and a take-back request wakes the race to look again (no sleeps)."""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from gateway.admission.queue import Priority
from gateway.errors import BadGateway, ServiceUnavailable
from gateway.path.exchange.first_token import Primed
from gateway.path.exchange.lease import CLIENT_GONE, Outcome
from gateway.path.exchange.race import Race
from gateway.path.exchange.readmission import BackToQueue
from gateway.recovery.counters import RecoveryMetrics
from gateway.recovery.hedging import Straggler
from gateway.recovery.take_back import Where
from gateway.schema import Recovery

UPPER = 0.5  # every replica's predicted band: the stall limit is 4 x 0.5 = 2 s


@dataclass
class FakeBackend:
    name: str
    movable: list[Any] = field(default_factory=list)


@dataclass
class FakeLease:
    name: str
    started: float = 0.0
    upper_s: float = UPPER
    supported: bool = True
    finished: list[Outcome] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.backend = FakeBackend(self.name)

    def finish(self, outcome: Outcome) -> None:
        self.finished.append(outcome)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Options:
    """Hedges go to the leases in ``spare``; the budget allows ``budget`` hedges; an attempt
    asked back with nowhere better goes where ``back`` says."""

    def __init__(self, spare: list[FakeLease], budget: int = 1, back: Where = Where.STAY) -> None:
        self.spare = spare
        self.budget = budget
        self.back = back
        self.asked: list[tuple[str, int, bool]] = []

    def straggler(self, lease: Any, elapsed_s: float, hedged: bool) -> Straggler:
        alternative = 0.1 if self.spare else None
        return Straggler(elapsed_s, lease.upper_s, lease.supported, hedged, alternative,
                         math.inf, False, Priority.STANDARD)  # fmt: skip

    def budget_allows(self) -> bool:
        self.budget -= 1
        return self.budget >= 0

    def hedge(self) -> Any:
        return self.spare.pop(0) if self.spare else None

    def asked_back(self, lease: Any, ahead: int, hedge_out: bool, now: float) -> Where:
        self.asked.append((lease.name, ahead, hedge_out))
        return Where.MOVE if hedge_out or self.spare else self.back

    async def open(self, lease: Any) -> Any:
        raise AssertionError("the test's race reaches first tokens itself")


class HandRace(Race):
    """A race whose attempts reach their first token when the test says so."""

    def __init__(self, options: Options, clock: Clock, settings: Recovery | None = None) -> None:
        self.metrics_registry = CollectorRegistry()
        self.metrics = RecoveryMetrics(self.metrics_registry)
        super().__init__(options, settings or Recovery(hedge_after=1), clock, self.metrics, "p")  # type: ignore[arg-type]
        self.outcomes: dict[str, asyncio.Future[Primed]] = {}

    async def reach(self, lease: Any) -> Primed:
        future = self.outcomes.setdefault(lease.name, asyncio.get_running_loop().create_future())
        return await future

    def resolve(self, lease: FakeLease) -> Primed:
        primed = Primed(lease, Response(), [b"data: {}\n\n"], 1.0)  # type: ignore[arg-type]
        self.outcomes.setdefault(lease.name, asyncio.get_running_loop().create_future())
        self.outcomes[lease.name].set_result(primed)
        return primed

    def count(self, name: str, **labels: str) -> float:
        sample = f"gateway_{name}_total"
        value = self.metrics_registry.get_sample_value(sample, {"pool": "p", **labels})
        return value or 0.0


class Response:
    closed = False

    def close(self) -> None:
        self.closed = True


async def _turn() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_a_first_token_in_time_wins_alone() -> None:
    a, clock = FakeLease("a"), Clock()
    race = HandRace(Options([FakeLease("b")]), clock)
    run = asyncio.ensure_future(race.run(a, deadline=60.0))  # type: ignore[arg-type]
    await _turn()
    primed = race.resolve(a)
    assert await run is primed
    assert a.finished == []
    assert a.backend.movable == []
    assert race.count("hedges", event="sent") == 0


async def test_a_late_first_token_is_hedged_and_the_loser_cancelled() -> None:
    a, b, clock = FakeLease("a"), FakeLease("b"), Clock()
    clock.now = 0.6  # past a's band: the race hedges at once
    race = HandRace(Options([b]), clock)
    run = asyncio.ensure_future(race.run(a, deadline=60.0))  # type: ignore[arg-type]
    await _turn()
    assert "b" in race.outcomes  # the hedge went out
    primed = race.resolve(b)
    assert await run is primed
    assert [o.status for o in a.finished] == [CLIENT_GONE]
    assert a.finished[0].retried
    assert a.finished[0].error_kind is None  # no fault of a's replica
    assert b.finished == []
    assert [race.count("hedges", event=e) for e in ("sent", "won", "cancelled")] == [1, 1, 1]


async def test_no_budget_no_hedge() -> None:
    a, b, clock = FakeLease("a"), FakeLease("b"), Clock()
    clock.now = 0.6
    race = HandRace(Options([b], budget=0), clock)
    run = asyncio.ensure_future(race.run(a, deadline=60.0))  # type: ignore[arg-type]
    await _turn()
    assert "b" not in race.outcomes
    race.resolve(a)
    await run
    assert race.count("hedges", event="sent") == 0


async def test_a_stalled_replica_is_failed_over_to_a_free_one() -> None:
    a, b, clock = FakeLease("a"), FakeLease("b"), Clock()
    clock.now = 2.0  # 4 x its band, no budget to hedge: fail over
    race = HandRace(Options([b], budget=0), clock)
    run = asyncio.ensure_future(race.run(a, deadline=60.0))  # type: ignore[arg-type]
    await _turn()
    assert "b" in race.outcomes
    primed = race.resolve(b)
    assert await run is primed
    assert [(o.status, o.error_kind, o.retried) for o in a.finished] == [
        (503, "upstream_stall", True)
    ]
    assert race.count("failovers", reason="stall") == 1
    assert race.count("hedges", event="sent") == 0  # a failover is no hedge: a is gone
    assert a.backend.movable == []


async def test_a_stalled_request_with_nowhere_to_go_stays() -> None:
    a, clock = FakeLease("a"), Clock()
    clock.now = 2.0
    race = HandRace(Options([], budget=0), clock)
    run = asyncio.ensure_future(race.run(a, deadline=60.0))  # type: ignore[arg-type]
    await _turn()
    primed = race.resolve(a)  # late, but not refused
    assert await run is primed
    assert a.finished == []
    assert race.count("failovers", reason="stall") == 0


async def test_a_failed_attempt_leaves_the_race_to_its_hedge() -> None:
    a, b, clock = FakeLease("a"), FakeLease("b"), Clock()
    clock.now = 0.6
    race = HandRace(Options([b]), clock)
    run = asyncio.ensure_future(race.run(a, deadline=60.0))  # type: ignore[arg-type]
    await _turn()
    race.outcomes["a"].set_exception(BadGateway("cut", code="upstream_protocol"))
    await _turn()
    primed = race.resolve(b)
    assert await run is primed
    assert [(o.error_kind, o.retried) for o in a.finished] == [("upstream_protocol", True)]


async def test_the_last_failure_is_raised() -> None:
    a, clock = FakeLease("a"), Clock()
    race = HandRace(Options([]), clock)
    run = asyncio.ensure_future(race.run(a, deadline=60.0))  # type: ignore[arg-type]
    await _turn()
    race.outcomes["a"].set_exception(ServiceUnavailable("cut", code="x", retryable=True))
    with pytest.raises(ServiceUnavailable):
        await run
    assert [o.retried for o in a.finished] == [True]


async def test_a_request_taken_back_moves_to_a_free_replica() -> None:
    a, b, clock = FakeLease("a"), FakeLease("b"), Clock()
    race = HandRace(Options([b], budget=0), clock)
    run = asyncio.ensure_future(race.run(a, deadline=60.0))  # type: ignore[arg-type]
    await _turn()
    a.backend.movable[0].take_back(0)
    await _turn()
    assert a.backend.movable == []
    assert len(b.backend.movable) == 1
    primed = race.resolve(b)
    assert await run is primed
    assert [(o.error_kind, o.retried) for o in a.finished] == [("taken_back", True)]
    assert race.count("failovers", reason="taken_back") == 1


async def test_a_request_taken_back_with_nowhere_better_goes_back_to_the_queue() -> None:
    a, clock = FakeLease("a"), Clock()
    options = Options([], budget=0, back=Where.QUEUE)
    race = HandRace(options, clock)
    run = asyncio.ensure_future(race.run(a, deadline=60.0))  # type: ignore[arg-type]
    await _turn()
    a.backend.movable[0].take_back(2)
    with pytest.raises(BackToQueue) as back:
        await run
    assert back.value.backend == "a"
    assert options.asked == [("a", 2, False)]
    assert a.backend.movable == []
    assert [(o.status, o.error_kind, o.retried) for o in a.finished] == [
        (CLIENT_GONE, "taken_back", True)  # cancelled there; its permit is not released
    ]
    assert race.count("failovers", reason="requeued") == 1
    assert race.count("failovers", reason="taken_back") == 0


async def test_a_request_taken_back_that_stays_keeps_its_place() -> None:
    a, clock = FakeLease("a"), Clock()
    options = Options([], budget=0, back=Where.STAY)
    race = HandRace(options, clock)
    run = asyncio.ensure_future(race.run(a, deadline=60.0))  # type: ignore[arg-type]
    await _turn()
    a.backend.movable[0].take_back(0)
    a.backend.movable[0].take_back(0)  # asked twice before it looks: one question
    await _turn()
    assert options.asked == [("a", 0, False)]
    assert len(a.backend.movable) == 1
    primed = race.resolve(a)
    assert await run is primed
    assert a.finished == []
    assert race.count("failovers", reason="requeued") == 0


async def test_a_client_that_leaves_ends_every_attempt() -> None:
    a, b, clock = FakeLease("a"), FakeLease("b"), Clock()
    clock.now = 0.6
    race = HandRace(Options([b]), clock)
    run = asyncio.ensure_future(race.run(a, deadline=60.0))  # type: ignore[arg-type]
    await _turn()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert [(o.error_kind, o.retried) for o in a.finished] == [("client_gone", False)]
    assert [(o.status, o.retried) for o in b.finished] == [(CLIENT_GONE, True)]
    assert a.backend.movable == []
    assert b.backend.movable == []


async def test_past_the_deadline_every_attempt_ends() -> None:
    a, clock = FakeLease("a"), Clock()
    race = HandRace(Options([], budget=0), clock, Recovery(stall_factor=100, hedge_after=1))
    run = asyncio.ensure_future(race.run(a, deadline=1.5))  # type: ignore[arg-type]
    await _turn()
    clock.now = 1.6
    a.backend.movable[0].take_back(0)
    with pytest.raises(TimeoutError):
        await run
    assert [(o.status, o.error_kind) for o in a.finished] == [(504, "upstream_timeout")]
