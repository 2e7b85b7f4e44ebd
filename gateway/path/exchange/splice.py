"""Continue a stream whose replica died after its first token, on another replica.

Algorithm: when a stream that has relayed some text fails (the connection cut, an error
event, an invalid or unfinished stream, a silence past ``idle_s``), ``Splice.resume`` asks the
dispatch stage for a continuation (``Resume``: another routable replica of the pool that can
continue, ``recovery/continuation.py``'s body: the text so far as a partial assistant
message with ``continue_final_message`` for vLLM/SGLang, as an assistant prefill for
llama.cpp, appended to the prompt for ``/v1/completions``), read up to its first token. The
relay goes on with it (``events.EventRelay.continued``: same id, the role-only opening left
out, usage summed). The failed attempt's lease is finished as retried; the continuation's
lease records the request when it ends. At most ``max_continuations`` per request; nothing
is continued once a tool call or anything but text was relayed, for a Responses API stream,
or when no replica can continue (then the stream ends with an error event and no
``[DONE]``).

The only per-token cost of this is ``Relayed.see`` (the event's text appended to a list) on
streams that could be continued; the text is joined only to continue.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from gateway.path.exchange.events import EventRelay
from gateway.path.exchange.first_token import Primed
from gateway.path.exchange.lease import Lease, Outcome
from gateway.recovery.continuation import CONTINUE_FINAL, Relayed, continuation_body
from gateway.recovery.counters import RecoveryMetrics

# The dispatch stage's: a continuation of ``lease``'s stream from ``relayed``, at its first
# token, on a replica not in ``tried`` (which it extends); None when none can continue.
Resume = Callable[[Lease, Relayed, list[str]], Awaitable[Primed | None]]


class Continuer(Protocol):
    """Where continuations come from (``dispatch.Dispatcher``)."""

    @property
    def recovery(self) -> RecoveryMetrics: ...

    def may_continue(self, lease: Lease) -> bool: ...

    async def continuation(
        self, lease: Lease, relayed: Relayed, tried: list[str]
    ) -> Primed | None: ...


class Splice:
    """One stream's continuations."""

    __slots__ = ("_limit", "_metrics", "_resume", "_tried", "count")

    def __init__(self, resume: Resume, limit: int, metrics: RecoveryMetrics, first: Lease):
        self._resume = resume
        self._limit = limit
        self._metrics = metrics
        self._tried = [first.backend.name]
        self.count = 0

    async def resume(self, lease: Lease, events: EventRelay) -> Primed | None:
        """A continuation after ``lease``'s attempt failed, or None (the stream ends)."""
        pool = lease.plan.pool.name
        relayed, request = events.relayed, lease.ctx.request
        if (
            relayed is None
            or self.count >= self._limit
            # A tool call, several choices, log probabilities: nothing can continue them.
            or continuation_body(request.endpoint, request.body, relayed, CONTINUE_FINAL) is None
        ):
            self._metrics.continuations.labels(pool, "impossible").inc()
            return None
        self.count += 1
        primed = await self._resume(lease, relayed, self._tried)
        if primed is None:
            self._metrics.continuations.labels(pool, "failed").inc()
            return None
        self._metrics.continuations.labels(pool, "ok").inc()
        return primed


def retried(outcome: Outcome) -> Outcome:
    """A failed attempt's outcome once its stream goes on elsewhere."""
    return Outcome(outcome.status, error_kind=outcome.error_kind, retried=True, phase=outcome.phase)
