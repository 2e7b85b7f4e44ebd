"""A pool's admission slots as the host's other workers hold them (``serve --workers N``).

The workers of one host are one gateway: a pool's slots are the host's, so a worker may
take one only while its own holders and its siblings' together are fewer than the slots,
and it checks and takes under the host's lock (``locked``), so two workers never take the
last slot both. Its queue's length and its arrival and completion rates are shown to the
siblings too, so a pool's saturation (``saturation.py``) weighs the host's traffic. One
process alone is ``ALONE``: nothing elsewhere, no lock.
"""

from __future__ import annotations

import contextlib
from contextlib import AbstractContextManager
from typing import Protocol


class HostSlots(Protocol):
    """The host board's view of one pool (``gateway/host/shares.py``)."""

    def locked(self) -> AbstractContextManager[None]: ...

    def held(self) -> int: ...

    def queued(self) -> int: ...

    def publish_held(self, held: int) -> None: ...

    def publish_queue(self, queued: int) -> None: ...

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

    def publish_queue(self, queued: int) -> None:
        return None

    def publish_rates(
        self, arrivals: tuple[float, float], completions: tuple[float, float]
    ) -> None:
        return None

    def rates(self, now: float, tau_s: float) -> tuple[float, float]:
        return 0.0, 0.0


ALONE = Alone()
