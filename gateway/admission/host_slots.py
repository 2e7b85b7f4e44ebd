"""A pool's admission slots as the host's other workers hold them (``serve --workers N``).

The workers of one host are one gateway: a pool's slots are the host's, so a worker may
take one only while its own holders and its siblings' together are fewer than the slots,
and it checks and takes under the host's lock (``locked``), so two workers never take the
last slot both. Its queue's length and its arrival and completion rates are shown to the
siblings too, so a pool's saturation (``saturation.py``) weighs the host's traffic. The
queues are one queue too: a free slot goes to a new request only while no worker has
waiters, and a worker hands a freed slot to its own first waiter only while no sibling's
stands ahead of it (``ahead``: by priority, then deadline, from each queue's published
``head``); else it leaves the slot to that sibling, whose tick takes it. Without this, each
worker served its own queue first and a burst's waiters in the other worker waited longer.
One process alone is ``ALONE``: nothing elsewhere, no lock.
"""

from __future__ import annotations

import contextlib
from contextlib import AbstractContextManager
from typing import Protocol

# A queue's most urgent waiter (``AdmissionQueue.head``: priority, deadline key); None: none.
Head = tuple[int, float] | None


class HostSlots(Protocol):
    """The host board's view of one pool (``gateway/host/shares.py``)."""

    def locked(self) -> AbstractContextManager[None]: ...

    def held(self) -> int: ...

    def queued(self) -> int: ...

    def publish_held(self, held: int) -> None: ...

    def publish_queue(self, queued: int, head: Head = None) -> None: ...

    def ahead(self, head: Head) -> bool: ...

    def publish_rates(
        self, arrivals: tuple[float, float], completions: tuple[float, float]
    ) -> None: ...

    def rates(self, now: float, tau_s: float) -> tuple[float, float]: ...


class Alone:
    """One process: no sibling holds a slot, waits or arrives."""

    def locked(self) -> AbstractContextManager[None]:
        return contextlib.nullcontext()

    def held(self) -> int:
        return 0

    def queued(self) -> int:
        return 0

    def publish_held(self, held: int) -> None:
        return None

    def publish_queue(self, queued: int, head: Head = None) -> None:
        return None

    def ahead(self, head: Head) -> bool:
        return False

    def publish_rates(
        self, arrivals: tuple[float, float], completions: tuple[float, float]
    ) -> None:
        return None

    def rates(self, now: float, tau_s: float) -> tuple[float, float]:
        return 0.0, 0.0


ALONE = Alone()
