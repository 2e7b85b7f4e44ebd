"""A slot in a pool, held from admission until the request ends."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol


class Releases(Protocol):
    """What a permit gives back to its pool's admission (``controller.PoolAdmission``)."""

    def prefilled(self, tokens: float) -> None: ...

    def release(
        self, cost: float, latency_s: float | None, dropped: bool, lease: str | None, held_s: float
    ) -> None: ...


class Permit:
    __slots__ = (
        "_admission",
        "_clock",
        "_cost",
        "_granted_at",
        "_lease",
        "_prefill",
        "_released",
        "queued_s",
    )

    def __init__(
        self,
        admission: Releases,
        cost: float,
        queued_s: float,
        *,
        clock: Callable[[], float],
        lease: str | None = None,
        prefill: float = 0.0,
    ) -> None:
        self._admission = admission
        self._cost = cost
        self._lease = lease
        self._prefill = prefill
        self._released = False
        self._clock = clock
        self._granted_at = clock()
        self.queued_s = queued_s

    def prefilled(self) -> None:
        """The request's first token arrived: its prompt no longer counts for pacing."""
        if self._prefill:
            tokens, self._prefill = self._prefill, 0.0
            self._admission.prefilled(tokens)

    def release(self, *, latency_s: float | None, dropped: bool) -> None:
        if not self._released:
            self._released = True
            self.prefilled()
            held = self._clock() - self._granted_at
            self._admission.release(self._cost, latency_s, dropped, self._lease, held)
