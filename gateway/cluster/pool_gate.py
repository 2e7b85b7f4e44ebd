"""Cluster admission at run time: each pool's lease gate, and the replica's link to Redis.

``PoolLeases`` is what a pool's admission asks before it lets a request go (the
``LeaseGate`` of ``admission.controller``): in cluster mode a lease from Redis, in local mode
a lease counted against the replica's local share. ``ClusterAdmission`` owns the store, the
mode, the background renewal and heartbeat, and the small tasks that send releases. Nothing
here raises on Redis trouble: a failed call switches the replica to local mode (logged once,
counted in ``gateway_redis_errors_total``) and the caller decides locally.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from typing import Any, TypeVar

from gateway.cluster.lease_store import LeaseStore, StoreUnavailable
from gateway.cluster.leases import LinkState, Mode, local_share
from gateway.metrics import GatewayMetrics

log = logging.getLogger(__name__)
T = TypeVar("T")


class ClusterLink:
    """The replica's link to Redis: calls that never raise, and the mode they imply."""

    def __init__(self, store: LeaseStore, metrics: GatewayMetrics) -> None:
        self.store = store
        self._metrics = metrics
        self._state = LinkState()
        self.epoch = 0  # counts falls back to local mode, so pools know to re-add their leases

    @property
    def mode(self) -> Mode:
        return self._state.mode

    @property
    def cluster(self) -> bool:
        return self._state.mode is Mode.CLUSTER

    async def run(self, op: str, call: Awaitable[T]) -> T | None:
        """The call's result, or None (and local mode) when Redis could not answer."""
        try:
            result = await call
        except StoreUnavailable as exc:
            self._metrics.redis_errors.labels(op).inc()
            if self._state.failed():
                self.epoch += 1
                log.warning(
                    "cluster admission: Redis unreachable (%s during %s); every pool falls "
                    "back to its local share of its limit",
                    exc,
                    op,
                )
            return None
        if self._state.succeeded():
            log.warning("cluster admission: Redis answers again; pools rejoin the cluster limit")
        return result


class PoolLeases:
    """One pool's leases held by this replica, and what it last saw of the cluster."""

    def __init__(
        self,
        pool: str,
        link: ClusterLink,
        *,
        new_id: Callable[[], str],
        spawn: Callable[[Coroutine[Any, Any, None]], None],
        poll_s: float,
        replicas: int,
        clock: Callable[[], float],
    ) -> None:
        self.pool = pool
        self.link = link
        self.poll_s = poll_s
        self.held: set[str] = set()
        self.seen = 0  # leases in the cluster, as last read
        self.replicas = replicas  # live replicas of the pool, as last read
        self._clock = clock
        self._seen_at = clock()
        # Requests that arrive while a call is in flight go together in the next one.
        self._asks: list[tuple[str, asyncio.Future[bool]]] = []
        self._asking = False
        self._limit = 1
        self._returns: list[str] = []
        self._thens: list[Callable[[], None]] = []
        self._returning = False
        self._new_id = new_id
        self._spawn = spawn
        self._synced_epoch = -1

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        self._spawn(coro)

    def cap(self, limit: int) -> int:
        """Requests this replica may run at once: the cluster decides, or the local share."""
        return limit if self.link.cluster else local_share(limit, self.replicas)

    def may_try(self, limit: int) -> bool:
        """Whether a lease might be had now, as far as this replica knows.

        "Full" is believed for one poll only: other replicas' releases are not seen, and a
        stale "full" would turn into a wait estimate (and maybe a refusal) for nothing.
        """
        fresh = self._clock() - self._seen_at <= self.poll_s
        return not self.link.cluster or self.seen < limit or not fresh

    async def acquire(self, limit: int) -> str | None:
        """A lease, or None when the cluster (or, in local mode, the local share) is full."""
        lease = self._new_id()
        if not self.link.cluster:
            return self._take_local(lease, limit)
        # A caller cancelled while it waits cancels its future; the batch then gives back
        # the lease if it was granted (``_settle``).
        answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._asks.append((lease, answer))
        self._limit = limit  # adaptive limits move: each call sends the latest
        if not self._asking:
            self._asking = True
            self.spawn(self._ask())
        return lease if await answer else None

    def release(self, lease: str, then: Callable[[], None]) -> None:
        """Give a lease back; ``then`` runs once the cluster can hand it out again."""
        if lease not in self.held:
            then()
            return
        self.held.discard(lease)
        if not self.link.cluster:
            then()
            return
        self.seen = max(0, self.seen - 1)
        self._returns.append(lease)
        self._thens.append(then)
        if not self._returning:
            self._returning = True
            self.spawn(self._give_back())

    async def renew(self) -> None:
        """Heartbeat and push the held leases' expiry; after an outage, re-add them."""
        epoch = self.link.epoch
        readd = self._synced_epoch != epoch
        call = self.link.store.renew(self.pool, sorted(self.held), readd)
        reply = await self.link.run("renew", call)
        if reply is not None:
            self._saw(reply.leases, reply.replicas)
            self._synced_epoch = epoch

    async def _ask(self) -> None:
        """Send the waiting asks, one call at a time, until none are left."""
        batch: list[tuple[str, asyncio.Future[bool]]] = []
        try:
            while self._asks:
                batch, self._asks, limit = self._asks, [], self._limit
                leases = [lease for lease, _ in batch]
                call = self.link.store.acquire(self.pool, leases, limit, len(self.held))
                reply = await self.link.run("acquire", call)
                if reply is None:  # Redis trouble: decide locally, in arrival order
                    granted = [self._take_local(lease, limit) is not None for lease in leases]
                else:
                    self._saw(reply.leases, reply.replicas)
                    granted = [i < reply.granted for i in range(len(batch))]
                    self.held.update(leases[: reply.granted])
                for (lease, answer), ok in zip(batch, granted, strict=True):
                    self._settle(lease, answer, ok)
        except asyncio.CancelledError:
            # Shutting down: nobody is left to answer the callers, so they are cancelled too.
            for _, answer in [*batch, *self._asks]:
                answer.cancel()
            self._asks = []
            raise
        finally:
            self._asking = False

    def _settle(self, lease: str, answer: asyncio.Future[bool], ok: bool) -> None:
        if not answer.done():
            answer.set_result(ok)
        elif ok:  # the caller left while the call was in flight
            self.release(lease, _nothing)

    async def _give_back(self) -> None:
        try:
            while self._returns:
                leases, self._returns = self._returns, []
                thens, self._thens = self._thens, []
                try:
                    await self.link.run("release", self.link.store.release(self.pool, leases))
                finally:
                    for then in thens:
                        then()
        finally:
            self._returning = False

    def _saw(self, leases: int, replicas: int) -> None:
        self.seen, self.replicas, self._seen_at = leases, replicas, self._clock()

    def _take_local(self, lease: str, limit: int) -> str | None:
        if len(self.held) >= local_share(limit, self.replicas):
            return None
        self.held.add(lease)
        return lease


class ClusterAdmission:
    """The replica's side of cluster admission: link, pool gates, renewal loop, shutdown."""

    def __init__(
        self,
        store: LeaseStore,
        metrics: GatewayMetrics,
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.link = ClusterLink(store, metrics)
        self.settings = store.settings
        self.pools: dict[str, PoolLeases] = {}
        self._metrics = metrics
        self._sleep = sleep
        self._clock = clock
        self._ids = itertools.count()
        self._tasks: set[asyncio.Task[None]] = set()

    def pool(self, name: str) -> PoolLeases:
        leases = self.pools.get(name)
        if leases is None:
            leases = PoolLeases(
                name,
                self.link,
                new_id=self._new_id,
                spawn=self.spawn,
                poll_s=self.settings.poll_s,
                replicas=self.settings.fallback_replicas,
                clock=self._clock,
            )
            self.pools[name] = leases
            self._watch(leases)
        return leases

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def renew_all(self, names: Iterable[str]) -> None:
        for name in set(names) | {n for n, p in self.pools.items() if p.held}:
            await self.pool(name).renew()

    async def run(self, names: Callable[[], Iterable[str]]) -> None:
        """Renew leases and heartbeats forever; in local mode this is also the rejoin probe."""
        while True:
            await self._sleep(self.settings.renew_interval_s)
            await self.renew_all(names())

    async def close(self) -> None:
        # Releases of the last requests are still being sent (each bounded by the timeout);
        # pumps of waiters that never got a lease are what is left to cancel.
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=2 * self.settings.op_timeout_s)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.link.cluster:
            for leases in self.pools.values():
                await self.link.run("leave", self.link.store.leave(leases.pool, leases.held))
        with contextlib.suppress(StoreUnavailable):
            await self.link.store.close()

    def _new_id(self) -> str:
        return f"{self.link.store.replica}:{next(self._ids)}"

    def _watch(self, leases: PoolLeases) -> None:
        m, name = self._metrics, leases.pool
        m.cluster_mode.labels(name).set_function(lambda: float(self.link.mode))
        m.cluster_leases.labels(name).set_function(lambda: leases.seen)
        m.cluster_replicas.labels(name).set_function(lambda: leases.replicas)
        m.cluster_held.labels(name).set_function(lambda: len(leases.held))


def _nothing() -> None:
    return None
