"""A slot in a pool, held from admission until the request ends (or until it is taken back
from an engine's queue and waits for a slot again: ``readmit``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from gateway.admission.decision import AdmissionRequest


class Releases(Protocol):
    """What a permit gives back to its pool's admission (``controller.PoolAdmission``)."""

    def prefilled(self, tokens: float) -> None: ...

    def release(
        self, cost: float, latency_s: float | None, dropped: bool, lease: str | None, held_s: float
    ) -> None: ...

    async def readmit(
        self, request: AdmissionRequest, tokens: float, lease: str | None, held_s: float
    ) -> Permit: ...

    def give_up(self, request: AdmissionRequest) -> float | None: ...


class Permit:
    __slots__ = (
        "_admission",
        "_clock",
        "_granted_at",
        "_lease",
        "_prefill",
        "_released",
        "queued_s",
        "request",
    )

    def __init__(
        self,
        admission: Releases,
        request: AdmissionRequest,
        queued_s: float,
        *,
        clock: Callable[[], float],
        lease: str | None = None,
    ) -> None:
        self._admission = admission
        self.request = request
        self._lease = lease
        self._prefill = request.prompt_tokens
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
            cost = self.request.cost
            self._admission.release(cost, latency_s, dropped, self._lease, held)

    def give_up(self) -> float | None:
        """The latest first token that still helps the request (``PoolAdmission.give_up``)."""
        return self._admission.give_up(self.request)

    async def readmit(self) -> Permit:
        """This slot given back unused (no hold, no latency sample) and a new one, after a
        wait in the pool's queue as any waiter; raises the waiter's refusal (a 503 with
        Retry-After) when it cannot be served in time. Once only: this permit is spent."""
        assert not self._released, "a released permit has no slot to give back"
        self._released = True
        tokens, self._prefill = self._prefill, 0.0
        held = self._clock() - self._granted_at
        return await self._admission.readmit(self.request, tokens, self._lease, held)
