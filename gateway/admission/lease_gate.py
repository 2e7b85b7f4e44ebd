"""What a pool's admission asks of a second gate in front of its slots (cluster leases).

A request holds a slot only while it also holds a lease from the gate. ``cap`` bounds the
pool's local slots (the replica's local share while the cluster cannot be reached);
``may_try`` says whether a lease might be had now (so a known-full cluster counts as a full
pool for wait estimates); ``acquire`` returns a lease or None when none is free;
``release`` gives one back and calls ``then`` once it can be handed out again; ``spawn``
runs the pool's lease pump for as long as the gate lives; waiters are retried every
``poll_s`` at least.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, Protocol


class LeaseGate(Protocol):
    """A second gate in front of the pool's slots, e.g. leases shared by a cluster."""

    poll_s: float

    def cap(self, limit: int) -> int: ...

    def may_try(self, limit: int) -> bool: ...

    async def acquire(self, limit: int) -> str | None: ...

    def release(self, lease: str, then: Callable[[], None]) -> None: ...

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None: ...
