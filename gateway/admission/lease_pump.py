"""Cluster admission's side of a pool: a slot also needs a lease from the pool's gate.

A request that finds a free local slot asks for its lease at once (``lease_now``); when the
cluster is full it waits in the queue like any other. Then one pump task per pool asks for a
lease for whoever is next (so priority, give-up time and lane order hold) and hands it over,
retrying when a slot or lease frees (``kick``) or every ``poll_s``. Without a gate every
method is a no-op and the pool dispatches by itself.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Protocol

from gateway.admission.lease_gate import LeaseGate
from gateway.admission.prefill import PrefillBudget
from gateway.admission.queue import AdmissionQueue


class Pool(Protocol):
    """What the pump needs of its pool's admission (``controller.PoolAdmission``)."""

    queue: AdmissionQueue
    inflight: int
    prefill: PrefillBudget

    def slots(self) -> int: ...

    def grant(self, lease: str | None) -> bool: ...

    def unclaim(self, tokens: float) -> None: ...

    def local_limit(self) -> int: ...


class LeasePump:
    def __init__(self, pool: Pool, leases: LeaseGate | None) -> None:
        self._pool = pool
        self.leases = leases
        self._pumping = False
        self._wake = asyncio.Event()

    async def lease_now(self, tokens: float) -> str | None:
        """The lease of a request that found a free local slot (already claimed for it)."""
        assert self.leases is not None
        try:
            lease = await self.leases.acquire(self._pool.local_limit())
        except BaseException:
            self._pool.unclaim(tokens)
            raise
        if lease is None:
            self._pool.unclaim(tokens)
        return lease

    def returned(self, lease: str | None) -> None:
        """A slot was released (with its lease, if it had one)."""
        if self.leases is not None and lease is not None:
            self.leases.release(lease, self.kick)
        elif self.leases is not None:
            self.kick()

    def kick(self) -> None:
        """Wake the pump, starting it when waiters have none running."""
        self._wake.set()
        if self.leases is not None and self._pool.queue and not self._pumping:
            self._pumping = True
            self.leases.spawn(self._pump(self.leases))

    async def _pump(self, leases: LeaseGate) -> None:
        """While requests wait: get a lease for whoever is next, then hand it over."""
        pool = self._pool
        try:
            while pool.queue:
                self._wake.clear()  # a wake from here on is kept for the nap below
                if pool.inflight >= pool.slots() or not pool.prefill.has_room():
                    await self._nap(leases.poll_s)
                    continue
                lease = await leases.acquire(pool.local_limit())
                if lease is None:
                    await self._nap(leases.poll_s)
                elif not pool.grant(lease):
                    leases.release(lease, _nothing)
        finally:
            self._pumping = False

    async def _nap(self, poll_s: float) -> None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(poll_s):
                await self._wake.wait()


def _nothing() -> None:
    return None
