"""Which requests found queued inside an engine to take back.

A read of an engine's metrics that shows requests waiting inside it while it runs its known
batch means some of what this gateway sent there waits where nothing can be done for it.
Engines serve in arrival order, so the queued ones are the last sent: of this gateway's
requests there still without a first token, the most recently dispatched ones, as many as it
has in flight beyond its cap on that replica (``BackendState.dispatch_cap``) and no more than
the engine reports waiting, are taken back. The caller cancels them there (the engine drops
them) and returns them to the gateway's queue, where admission weighs them again like any
waiter: another replica, a wait, or an honest refusal, since their client has seen nothing
yet.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


def to_take_back(pending: Sequence[T], inflight: int, cap: int, reported_waiting: float) -> list[T]:
    """The requests to take back; ``pending``: those without a first token, oldest first."""
    excess = min(inflight - cap, int(reported_waiting), len(pending))
    return list(pending[len(pending) - excess :]) if excess > 0 else []
