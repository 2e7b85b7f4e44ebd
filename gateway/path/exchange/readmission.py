"""A request asked back from an engine's queue: where it goes, and its way back to the
gateway's queue.

Algorithm: the facts of ``recovery/take_back.py``'s rule are gathered here for one attempt,
at the time it is asked back (``now``, the race's clock): its predicted first token where it is,
from the replica's TTFT model (calibrated upper band) on what stands before it now, with
the engine's queue ahead of it set to the ``ahead`` requests of ours waiting there before it;
its limit, from its admission (``Permit.give_up``: its deadline, its objective while the pool
is saturated); whether it has somewhere better now (a hedge out, a free slot elsewhere), or
is on the pool's only replica that could serve it; how often it was taken back. Sent back to
the queue (``Where.QUEUE``), the race cancels the attempt and raises ``BackToQueue``; the
dispatch stage gives its slot back and waits for a new one (``readmitted``:
``Permit.readmit``, which raises the waiter's 503 with Retry-After when it cannot be served
in time), then dispatches it again like a new attempt.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

from gateway.admission.permit import Permit
from gateway.metrics import GatewayMetrics
from gateway.path.exchange.lease import Lease
from gateway.recovery.take_back import AskedBack, Where, where


class BackToQueue(Exception):  # a signal to the dispatch stage, not an error
    """The race gave up its attempt on ``backend`` for the gateway's queue."""

    def __init__(self, backend: str) -> None:
        super().__init__(backend)
        self.backend = backend


def where_to(
    lease: Lease, ahead: int, elsewhere: bool, alone: bool, taken: int, now: float
) -> Where:
    """Where ``lease``'s attempt, asked back with ``ahead`` of ours before it in the engine's
    queue, goes (``take_back.where``; ``alone``: no other replica of the pool could serve
    it); never to the queue without an admission's permit."""
    backend, permit = lease.backend, lease.permit
    features = replace(backend.ttft_features(lease.uncached_tokens), engine_waiting=ahead)
    asked = AskedBack(
        taken=taken,
        max_taken=lease.plan.pool.settings.recovery.max_take_backs,
        elsewhere=elsewhere,
        alone=alone,
        first_token_at=now + backend.ttft_model.upper(features),
        supported=backend.ttft_model.supported(features),
        limit=None if permit is None else permit.give_up(),
    )
    chosen = where(asked)
    return Where.STAY if chosen is Where.QUEUE and permit is None else chosen


async def readmitted(permit: Permit | None, metrics: GatewayMetrics) -> Permit:
    """A new slot for a request sent back to the queue (``Permit.readmit``); a client that
    leaves while it waits is a ``queued`` cancellation, as at admission."""
    assert permit is not None, "sent back to the queue only with a permit"
    try:
        return await permit.readmit()
    except asyncio.CancelledError:
        metrics.cancellations.labels("queued").inc()
        raise
