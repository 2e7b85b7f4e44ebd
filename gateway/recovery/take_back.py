"""Which requests found queued inside an engine to take back, and where each goes.

A read of an engine's metrics that shows requests waiting inside it while it runs its known
batch means some of what this gateway sent there waits where nothing can be done for it.
Engines serve in arrival order, so the queued ones are the last sent: of this gateway's
requests there still without a first token, the most recently dispatched ones, as many as it
has in flight beyond its cap on that replica (``BackendState.dispatch_cap``) and no more than
the engine reports waiting, are asked back (``to_take_back``; each with how many of ours wait
ahead of it there).

Where an attempt asked back goes (``where``, a value; the first-token race acts on it):

1. ``STAY`` when the request was taken back ``max_take_backs`` times already (a bound: it
   cannot bounce between the engines and the gateway's queue);
2. ``MOVE`` when it has somewhere better now: a hedge of it is out, or another replica of the
   pool has a free slot; it is cancelled there and the race goes on elsewhere;
3. ``STAY`` when that engine is the only replica of the pool that could serve it (``alone``:
   its next slot is the pool's next slot, so moving it would only lose the place it holds)
   and its first token there (the replica's calibrated prediction, with the requests queued
   ahead of it there) is predicted by its limit, on a prediction that rests on observations;
4. ``QUEUE`` otherwise: it is cancelled on the engine (the engine drops it; it had no slot
   there, so no work is lost) and goes back to the gateway's queue, where admission weighs
   it again like any waiter (``admission/readmit.py``): in the place its original arrival,
   deadline and priority give it, it gets the next slot that frees on any replica of the
   pool, or, once the wait ahead shows it cannot be served by its limit, the honest 503 with
   Retry-After the other waiters get. Its client has seen nothing yet (the response head
   waits for the first token), so the refusal is an answer, never an error after a 200.

Why the pool's queue rather than the engine's when the pool has other replicas: the engine
frees a slot when the first of its running requests ends, the pool when the first of all of
theirs does, which is never later; how long the running ones have left is what no
prediction knows (their answers' lengths). A probe (``BackendState.dispatch_cap``: one sent
beyond what the engine was seen running, to learn whether it runs more) found waiting has
done its work: it showed the batch, and waits for the pool's next slot, not one engine's.
Measured with two gateways on one fleet (``python -m loadtests.slo --scenarios replicas``):
both sent one more into the same engine at once, and the one that found it full stayed in
its queue 2.7 s, where the other engine freed a slot 0.6 s after it was sent.

Its limit is the one a waiter of the gateway's queue is held to (``rules.give_up_at``): its
deadline (the client's ``x-gateway-deadline-ms``, else the pool's default), and its
objective while the pool is saturated. A request served past that limit in an engine is one
admission would have refused in its queue; served there in time, it stays.

With several workers on one host (``serve --workers``) each takes back its part of what the
host has there beyond the cap, in proportion to what it sent (``own_cap``), so the workers
together take back the excess once.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TypeVar

T = TypeVar("T")


class Where(StrEnum):
    STAY = "stay"  # it keeps its place in the engine's queue
    MOVE = "move"  # to its hedge, or a new attempt on a replica with a free slot now
    QUEUE = "queue"  # back to the gateway's queue (admission)


@dataclass(frozen=True, slots=True)
class AskedBack:
    """What is known of an attempt asked back, at the time it is asked (the clock's)."""

    taken: int  # times this request was taken back already
    max_taken: int  # the pool's ``recovery.max_take_backs``
    elsewhere: bool  # a hedge is out, or another replica has a free slot now
    alone: bool  # no other replica of the pool could serve it (routable, serving its endpoint)
    first_token_at: float  # its predicted first token where it is (calibrated)
    supported: bool  # that prediction rests on observations
    limit: float | None  # its give-up time for a first token (None: no limit)


def where(asked: AskedBack) -> Where:
    """Where an attempt asked back goes (see the module's rules)."""
    if asked.taken >= asked.max_taken:
        return Where.STAY
    if asked.elsewhere:
        return Where.MOVE
    in_time = asked.limit is None or asked.first_token_at <= asked.limit
    if asked.alone and asked.supported and in_time:
        return Where.STAY
    return Where.QUEUE


def to_take_back(pending: Sequence[T], inflight: int, cap: int, reported_waiting: float) -> list[T]:
    """The requests to take back; ``pending``: those without a first token, oldest first."""
    excess = min(inflight - cap, int(reported_waiting), len(pending))
    return list(pending[len(pending) - excess :]) if excess > 0 else []


def own_cap(own: int, host: float, cap: int) -> int:
    """This worker's cap on the replica: with ``own`` of the host's ``host`` in flight there,
    its share of the excess over ``cap`` is taken back from its own (all of it when alone)."""
    if host <= own or own <= 0:
        return cap
    beyond = max(0.0, host - cap)
    return own - math.ceil(beyond * own / host)
