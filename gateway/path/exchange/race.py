"""The first-token race: one request's attempts until one of them has its first token.

Algorithm: the first attempt is opened and read up to its first token (``first_token.py``)
as a task; the race sleeps until ``recovery.hedging.next_look`` of its oldest live attempt
(the "primary": its prediction's upper band, then its stall limit), or until an attempt ends,
or until the replica of an attempt asks for it back (``take_back``, from a read of the
engine's metrics). Then:

- an attempt has its first token: it wins; every other attempt is cancelled at once (its
  upstream connection closed, so the engine drops it, as for a client that leaves);
- an attempt failed: it is finished as retried; the race goes on with the others, or, when
  none is left, raises that failure (the dispatch stage tries another replica or answers);
- ``decide`` says ``HEDGE``: a second attempt goes to another replica (``Options.hedge``:
  picked now, predicted sooner, paid from the pool's hedge budget);
- ``decide`` says ``FAIL_OVER`` (the primary sent nothing within its stall limit): it is
  cancelled and the race goes on with the hedge if one is out, else with a new attempt on
  another replica with a free slot now (``Options.hedge``, not paid from the hedge budget:
  the cancelled attempt costs nothing more). With neither, it stays where it is (a failover
  would only move it from one queue to another, or refuse a request that is merely late in
  a saturated pool) and the race looks again one stall limit later; ``first_token_s`` still
  bounds it;
- the replica asks for it back (a take-back: it waits in the engine's queue): where it goes
  is ``Options.asked_back``'s (``recovery/take_back.py``): ``MOVE``, as a failover above;
  ``QUEUE``, it is cancelled and the race ends with ``BackToQueue`` (the dispatch stage
  returns the request to the gateway's queue, ``exchange/readmission.py``); ``STAY``, it
  keeps its place there (asked again at the next read of the engine's metrics).

Every attempt's lease is finished here except the winner's (the relay's from then on). A
race cancelled from outside (the client left) finishes the primary as the client's request
and the others as retried.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from dataclasses import replace
from typing import Protocol

from gateway.errors import GatewayError
from gateway.path.exchange.first_token import (
    STALL,
    TAKEN_BACK,
    Primed,
    read_first_token,
)
from gateway.path.exchange.lease import CLIENT_GONE, Lease, Outcome, Phase
from gateway.path.exchange.readmission import BackToQueue
from gateway.recovery.counters import RecoveryMetrics
from gateway.recovery.hedging import Move, Straggler, decide, next_look, stall_limit_s
from gateway.recovery.take_back import Where
from gateway.schema import Recovery
from gateway.upstream import UpstreamResponse

# The failover reason of an attempt taken back to the gateway's queue (``taken_back``: to
# another replica).
REQUEUED = "requeued"


class Options(Protocol):
    """What the race may do besides waiting (the dispatch stage's, for one request)."""

    async def open(self, lease: Lease) -> UpstreamResponse:
        """Send the attempt and wait for its 200 head (``relay.Proxy.open``)."""
        ...

    def straggler(self, lease: Lease, elapsed_s: float, hedged: bool) -> Straggler:
        """What is known of ``lease``'s attempt ``elapsed_s`` after its dispatch."""
        ...

    def budget_allows(self) -> bool:
        """Whether the pool's hedge budget has room for one more (spent if so)."""
        ...

    def hedge(self) -> Lease | None:
        """A lease on another replica with room now, or None."""
        ...

    def asked_back(self, lease: Lease, ahead: int, hedge_out: bool, now: float) -> Where:
        """Where ``lease``'s attempt, asked back by its replica, goes (counted unless it
        stays)."""
        ...


class _Attempt:
    """One attempt of the race, and its standing in the replica's ``movable`` list."""

    __slots__ = ("hedge", "lease", "race", "task")

    def __init__(self, lease: Lease, race: Race, hedge: bool = False) -> None:
        self.lease = lease
        self.race = race
        self.hedge = hedge
        self.task = asyncio.ensure_future(race.reach(lease))
        self.task.add_done_callback(_retrieved)
        self.task.add_done_callback(race.poke)
        lease.backend.movable.append(self)

    def take_back(self, ahead: int) -> None:
        self.race.asked_back(self, ahead)

    def leave(self) -> None:
        movable = self.lease.backend.movable
        if self in movable:
            movable.remove(self)


class Race:
    def __init__(
        self,
        options: Options,
        settings: Recovery,
        clock: Callable[[], float],
        metrics: RecoveryMetrics,
        pool: str,
    ) -> None:
        self._options = options
        self._settings = settings
        self._clock = clock
        self._metrics = metrics
        self._pool = pool
        self._live: list[_Attempt] = []
        # What the race sleeps on: set by an attempt's end, a take-back or the next look.
        self._waiter: asyncio.Future[None] | None = None
        self._asked: list[tuple[_Attempt, int]] = []
        self._hedged = False
        self._again = -math.inf  # a stalled attempt with nowhere to go: when to look again

    async def reach(self, lease: Lease) -> Primed:
        response = await self._options.open(lease)
        return await read_first_token(lease, response, self._clock)

    def asked_back(self, attempt: _Attempt, ahead: int) -> None:
        if attempt in self._live and all(attempt is not a for a, _ in self._asked):
            self._asked.append((attempt, ahead))
            self.poke()

    def poke(self, *_: object) -> None:
        """Wake the race (an attempt ended, a take-back, the time of the next look)."""
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def run(self, first: Lease, deadline: float) -> Primed:
        """The winner; raises the last failure, a stall, ``TimeoutError`` at ``deadline``
        (the clock's; every attempt finished then), or ``BackToQueue``."""
        self._live.append(_Attempt(first, self))
        try:
            return await self._run(deadline)
        except asyncio.CancelledError:
            for i, attempt in enumerate(self._live):
                self._drop(attempt, None if i else Outcome.client_gone(Phase.FIRST_TOKEN))
            raise
        finally:
            for attempt in self._live:
                attempt.task.cancel()
                attempt.leave()

    async def _run(self, deadline: float) -> Primed:
        while True:
            now = self._clock()
            if now >= deadline:
                for attempt in self._live:
                    self._drop(attempt, Outcome(504, error_kind="upstream_timeout", retried=True))
                self._live.clear()
                raise TimeoutError
            primary = self._live[0]
            elapsed = now - primary.lease.started
            straggler = self._options.straggler(primary.lease, elapsed, self._hedged)
            move = decide(straggler, self._settings, True)
            if move is Move.FAIL_OVER and now >= self._again:
                if self._move(primary, STALL):
                    continue
                # Nowhere to go now (the others busy or tried): it stays, as a request
                # queued in a busy engine would; another look one stall limit later.
                self._again = now + stall_limit_s(primary.lease.upper_s, self._settings)
            if move is Move.HEDGE:
                # Without budget now, no second look before the stall limit.
                if self._options.budget_allows():
                    self._hedge()
                self._hedged = True
                straggler = replace(straggler, hedged=True)
            look = primary.lease.started + next_look(straggler, self._settings)
            if move is Move.FAIL_OVER:
                look = self._again
            # A millisecond past the look: a timer due a hair early would spin.
            await self._sleep(max(0.0, min(look, deadline) - now) + 0.001)
            for attempt in [a for a in self._live if a.task.done()]:
                won = self._ended(attempt)
                if won is not None:
                    return won
            self._take_back()

    async def _sleep(self, timeout_s: float) -> None:
        """Until an attempt ends, a take-back, or ``timeout_s``: one future and one timer
        (``asyncio.wait`` would add a task, a future and callbacks per attempt, each look)."""
        if self._asked or any(a.task.done() for a in self._live):
            return
        loop = asyncio.get_running_loop()
        self._waiter = loop.create_future()
        timer = loop.call_later(timeout_s, self.poke)
        try:
            await self._waiter
        finally:
            timer.cancel()
            self._waiter = None

    def _ended(self, attempt: _Attempt) -> Primed | None:
        """The winner, or None when ``attempt`` failed (raised when it was the last)."""
        self._live.remove(attempt)
        attempt.leave()
        error = attempt.task.exception()
        if error is None:
            won = attempt.task.result()
            if attempt.hedge:
                self._metrics.hedges.labels(self._pool, "won").inc()
            for other in self._live:
                self._metrics.hedges.labels(self._pool, "cancelled").inc()
                self._drop(other, None)
            self._live.clear()
            return won
        if not isinstance(error, GatewayError):
            raise error
        outcome = Outcome(error.http_status(), error_kind=error.code or "error", retried=True)
        attempt.lease.finish(outcome)
        if not self._live:
            raise error
        self._metrics.failovers.labels(self._pool, "error").inc()
        return None

    def _hedge(self) -> None:
        lease = self._options.hedge()
        if lease is not None:
            self._metrics.hedges.labels(self._pool, "sent").inc()
            self._live.append(_Attempt(lease, self, hedge=True))

    def _take_back(self) -> None:
        asked, self._asked = self._asked, []
        for attempt, ahead in asked:
            if attempt not in self._live:
                continue
            hedge_out = len(self._live) > 1
            where = self._options.asked_back(attempt.lease, ahead, hedge_out, self._clock())
            if where is Where.MOVE:
                self._move(attempt, TAKEN_BACK)  # False: the free slot went meanwhile
            elif where is Where.QUEUE:  # alone: nothing else is out
                self._live.remove(attempt)
                self._metrics.failovers.labels(self._pool, REQUEUED).inc()
                self._drop(attempt, Outcome(CLIENT_GONE, error_kind=TAKEN_BACK, retried=True))
                raise BackToQueue(attempt.lease.backend.name)

    def _move(self, attempt: _Attempt, reason: str) -> bool:
        """Give up ``attempt`` for the others, or for a new attempt on another replica with
        a free slot; False (nothing done) when there is neither."""
        lease = None if len(self._live) > 1 else self._options.hedge()
        if lease is None and len(self._live) == 1:
            return False
        self._live.remove(attempt)
        self._fail_over(attempt, reason)
        if lease is not None:
            self._live.append(_Attempt(lease, self))
        self._again = -math.inf  # a new primary: its own stall limit
        return True

    def _fail_over(self, attempt: _Attempt, reason: str) -> None:
        label = "stall" if reason == STALL else reason
        self._metrics.failovers.labels(self._pool, label).inc()
        status = 503 if reason == STALL else CLIENT_GONE
        self._drop(attempt, Outcome(status, error_kind=reason, retried=True))

    def _drop(self, attempt: _Attempt, outcome: Outcome | None) -> None:
        """Cancel an attempt and finish its lease (``outcome`` None: a loser, retried)."""
        attempt.task.cancel()
        attempt.leave()
        if attempt.task.done() and not attempt.task.cancelled() and not attempt.task.exception():
            attempt.task.result().response.close()
        attempt.lease.finish(outcome or Outcome(CLIENT_GONE, retried=True))


def _retrieved(task: asyncio.Future[Primed]) -> None:
    """A cancelled loser may still end with its own error: it is known, not lost."""
    if not task.cancelled():
        task.exception()
