"""One streamed exchange relayed to its client: the relay loop.

The loop, once per upstream chunk: check the exchange's total deadline, read the chunk
(whatever arrived since the last read, as one), hand it to the per-event work
(``events.EventRelay``: re-framing, usage, the first token, capture), write what that
returned in one write; but the frames read with the stream's last event (``[DONE]``, or a
typed stream's terminal event) are kept to leave with the end of the body (``ending``), in
the response's last write: a short answer read whole costs one write less. Nothing else runs
per chunk: silences are bounded by one ``StallTimer`` per exchange (``first_token_s`` until
the first token, ``idle_s`` after it, never past ``total_s``), which interrupts a read that
waits too long, instead of a timeout set and cancelled around every read. How the exchange
ends is decided once, in ``pump``'s ``finally``: the upstream connection closed at once
unless the body was read to its end (so the backend stops generating when the client leaves
or a timeout strikes), the usage counted, the lease finished (the single ``on_complete``).
Past the first token, when the server offers a ``ClientBody`` (a way to the client's
connection past ``send``), writes go through it while the client keeps up, and plain token
events are relayed from the upstream connection's callback while the loop waits
(``direct.py``): the loop then wakes only for the other events.
The exchange starts from the chunks read up to its first token (``first_token.py``: they go
out first, in one write); one cut short after it is continued on another replica when it can
be (``splice.py``), the relay going on with the continuation's exchange.

Parameters: the lease (request, plan, backend), the opened upstream response, the pool's
timeouts, the clock, the per-event work and the cache's capture.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from gateway.cache.store.capture import AnswerCapture
from gateway.errors import GatewayError, GatewayTimeout
from gateway.openai.streaming import ClientBody, Write
from gateway.path.exchange.direct import DirectRelay
from gateway.path.exchange.events import EventRelay
from gateway.path.exchange.first_token import Primed
from gateway.path.exchange.lease import Lease, Outcome, Phase
from gateway.path.exchange.splice import Splice, retried
from gateway.schema import Timeouts
from gateway.upstream import UpstreamIOError, UpstreamResponse
from gateway.upstream import failures as upstream_errors
from gateway.upstream.stall_timer import StallTimer


class StreamRelay:
    """An ``EventSource`` (``openai/streaming.py``) over one opened upstream exchange."""

    def __init__(
        self,
        lease: Lease,
        response: UpstreamResponse,
        timeouts: Timeouts,
        clock: Callable[[], float],
        events: EventRelay,
        capture: AnswerCapture | None,
        primed: Primed | None = None,
        splice: Splice | None = None,
    ) -> None:
        self._lease = lease
        self._response = response
        self._timeouts = timeouts
        self._clock = clock
        self._events = events
        self._capture = capture
        self._primed = primed
        self._splice = splice
        self._deadline = lease.ctx.arrival + timeouts.total_s
        self._started = False
        self._last = b""  # frames read with the stream's last event: sent with its end
        self._body: ClientBody | None = None  # the server's way past ``write``, if any

    async def pump(self, write: Write, body: ClientBody | None = None) -> bytes:
        self._started = True
        self._body = body
        outcome = Outcome(200)
        primed = self._primed
        while True:
            error = await self._relay(write, outcome, primed)
            if error is None or self._splice is None or outcome.error_kind == "total_timeout":
                break
            # Cut short after its first token: continued elsewhere when it can be.
            lease, events = self._lease, self._events
            try:
                primed = await self._splice.resume(lease, events)
            except asyncio.CancelledError:
                lease.finish(Outcome.client_gone(Phase.STREAMING))
                raise
            if primed is None:
                break
            if self._last:  # (an error after the last event: what came before goes first)
                await write(self._last)
                self._last = b""
            lease.finish(retried(outcome))
            self._lease, self._response = primed.lease, primed.response
            self._events = events.continued(primed.lease)
            first_at, outcome = outcome.first_token_at, Outcome(200)
            outcome.first_token_at = first_at
        self._lease.finish(outcome)
        return self._last + self._events.ending(None if error is None else error.body())

    async def _relay(
        self, write: Write, outcome: Outcome, primed: Primed | None
    ) -> GatewayError | None:
        """Relay the current exchange to its end; its error, if it failed (``outcome`` says
        how it ended; the lease is the caller's to finish)."""
        lease, events, clock, read = (
            self._lease,
            self._events,
            self._clock,
            self._response.next_chunk,
        )
        budget, deadline, body = self._timeouts.first_token_s, self._deadline, self._body
        error: GatewayError | None = None
        diverted = False
        stall = StallTimer(clock, deadline, self._stalled)
        try:
            if primed is not None:
                if primed.first_token_at is not None:
                    outcome.first_token_at = outcome.first_token_at or primed.first_token_at
                    budget = self._timeouts.idle_s
                held = b"".join([events.feed(chunk) for chunk in primed.held])
                if held and events.done and events.error is None:
                    self._last = held
                elif held:
                    await write(held)
            stall.start(clock(), budget)
            feed, progress, waiting = events.feed, stall.progress, outcome.first_token_at is None
            diverted = body is not None and not waiting and self._divert(body, stall)
            while not events.done:
                now = clock()
                if now >= deadline:
                    raise GatewayTimeout(
                        "The request exceeded its total time limit.", code="total_timeout"
                    )
                progress(now, budget)
                out = feed(await read())
                if out:
                    if waiting and events.token_seen:
                        waiting = False
                        outcome.first_token_at = clock()
                        lease.first_token()
                        budget = self._timeouts.idle_s
                        diverted = body is not None and self._divert(body, stall)
                    if events.done and events.error is None:
                        self._last = out
                    elif body is not None and body.ready():
                        body.write(out)
                    else:
                        await write(out)
            if diverted:
                diverted = False
                self._response.divert(None)
            error = events.error
            if error is None:
                stall.progress(clock(), self._timeouts.idle_s)
                # Reading to the end lets the connection go back to the pool.
                while await read() is not None:
                    pass
                if self._capture is not None:
                    self._capture.finish()
        except (UpstreamIOError, TimeoutError) as exc:
            error = upstream_errors.from_exception(exc, lease.backend.name)
        except GatewayError as exc:
            error = exc
        except asyncio.CancelledError:
            phase = Phase.FIRST_TOKEN if outcome.first_token_at is None else Phase.STREAMING
            client_gone = Outcome.client_gone(phase)
            self._count(events, client_gone)
            lease.finish(client_gone)
            raise
        finally:
            stall.cancel()
            if diverted:
                self._response.divert(None)
            self._response.close()
        self._count(events, outcome)
        if error is not None:
            outcome.status = error.http_status()
            outcome.error_kind = error.code or type(error).__name__
        return error

    def _divert(self, body: ClientBody, stall: StallTimer) -> bool:
        """Plain tokens from here on relayed from the connection's callback (``direct.py``);
        False when there can be none (no template: the sink would decline every chunk)."""
        if not self._events.has_template:
            return False
        idle_s = self._timeouts.idle_s
        sink = DirectRelay(body, self._events, stall.progress, self._clock, self._deadline, idle_s)
        self._response.divert(sink)
        return True

    @staticmethod
    def _count(events: EventRelay, outcome: Outcome) -> None:
        # Servers send one token per event unless asked for usage; usage is exact.
        if events.usage is not None:
            outcome.input_tokens, outcome.output_tokens = events.usage
        else:
            outcome.output_tokens = events.token_events

    def _stalled(self) -> bool:
        return self._response.interrupt(TimeoutError())

    def goodbye(self, error: dict[str, Any]) -> bytes:
        return self._last + self._events.ending(error)

    def abandon(self) -> None:
        """Never pumped (the response was not sent): close the exchange as a client gone."""
        if not self._started:
            self._started = True
            self._response.close()
            self._lease.finish(Outcome.client_gone(Phase.FIRST_TOKEN))
