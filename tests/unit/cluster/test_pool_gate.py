"""The per-pool lease gate and the link's fallback, against a fake store (no Redis)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection, Sequence

import pytest
from prometheus_client import CollectorRegistry

from gateway.cluster.lease_store import StoreUnavailable
from gateway.cluster.leases import AcquireReply, Mode, RenewReply
from gateway.cluster.pool_gate import ClusterAdmission, PoolLeases
from gateway.metrics import GatewayMetrics
from gateway.schema import Cluster
from tests.support.waiting import until


class FakeStore:
    """A cluster of ``room`` leases in memory; ``up = False`` makes every call fail."""

    def __init__(self, room: int = 4, replicas: int = 2) -> None:
        self.settings = Cluster(enabled=True, poll_s=0.01)
        self.replica = "me"
        self.room = room
        self.replicas = replicas
        self.up = True
        self.leases: set[str] = set()
        self.renewals: list[tuple[list[str], bool]] = []
        self.gate: asyncio.Event | None = None  # when set, acquire waits for it
        self.left: list[tuple[str, list[str]]] = []
        self.released: list[str] = []  # leases given back, in order
        self.batches: list[int] = []

    def _check(self) -> None:
        if not self.up:
            raise StoreUnavailable("ConnectionError: refused")

    async def acquire(
        self, pool: str, leases: Sequence[str], limit: int, held: int
    ) -> AcquireReply:
        self.batches.append(len(leases))
        if self.gate is not None:
            await self.gate.wait()
        self._check()
        granted = max(0, min(len(leases), min(limit, self.room) - len(self.leases)))
        self.leases.update(leases[:granted])
        return AcquireReply(granted, len(self.leases), self.replicas)

    async def release(self, pool: str, leases: Collection[str]) -> None:
        self._check()
        self.leases.difference_update(leases)
        self.released += sorted(leases)

    async def renew(self, pool: str, leases: Collection[str], readd: bool) -> RenewReply:
        self._check()
        self.renewals.append((list(leases), readd))
        if readd:
            self.leases |= set(leases)
        return RenewReply(len(self.leases), self.replicas)

    async def leave(self, pool: str, leases: Collection[str]) -> None:
        self._check()
        self.left.append((pool, sorted(leases)))

    async def close(self) -> None:
        return None


def _cluster(store: FakeStore) -> tuple[ClusterAdmission, PoolLeases, GatewayMetrics]:
    metrics = GatewayMetrics(CollectorRegistry())
    cluster = ClusterAdmission(store, metrics)
    return cluster, cluster.pool("small"), metrics


async def test_leases_come_from_the_store_until_the_cluster_is_full() -> None:
    store = FakeStore(room=2)
    _, gate, _ = _cluster(store)
    first, second, third = [await gate.acquire(4) for _ in range(3)]
    assert first is not None
    assert second is not None
    assert third is None
    assert (gate.seen, gate.replicas, gate.held) == (2, 2, {first, second})
    assert not gate.may_try(2)  # known full: a new request queues instead of asking
    freed: list[str] = []
    gate.release(first, lambda: freed.append("then"))
    await until(lambda: freed, what="the release's callback")
    assert store.leases == {second}
    assert freed == ["then"]  # the pump is woken only once the store has the lease back


async def test_redis_trouble_falls_back_to_the_local_share_and_logs_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = FakeStore(room=4, replicas=2)
    _, gate, metrics = _cluster(store)
    assert await gate.acquire(4) is not None  # cluster mode: 2 live replicas seen
    store.up = False
    with caplog.at_level(logging.WARNING):
        leases = [await gate.acquire(4) for _ in range(3)]
    assert leases[0] is not None  # decided locally: held 2 of a share of ceil(4 / 2)
    assert leases[1:] == [None, None]
    assert gate.link.mode is Mode.LOCAL
    assert gate.cap(4) == 2
    assert len([r for r in caplog.records if "unreachable" in r.message]) == 1
    errors = metrics.registry.get_sample_value("gateway_redis_errors_total", {"op": "acquire"})
    assert errors == 1.0  # local mode does not call Redis on the request path again


async def test_renewal_rejoins_and_readds_the_leases_of_the_outage() -> None:
    store = FakeStore(room=4, replicas=1)
    cluster, gate, _ = _cluster(store)
    await cluster.renew_all(["small"])
    store.up = False
    lease = await gate.acquire(4)  # fails over to a local lease
    assert lease is not None
    assert gate.link.mode is Mode.LOCAL
    await cluster.renew_all(["small"])  # still down: stays local
    store.up = True
    await cluster.renew_all(["small"])
    assert gate.link.mode is Mode.CLUSTER
    assert store.renewals[-1] == ([lease], True)
    assert store.leases == {lease}  # the cluster counts the request the outage admitted
    await cluster.renew_all(["small"])
    assert store.renewals[-1] == ([lease], False)  # an ordinary renewal updates only


async def test_a_caller_cancelled_mid_acquire_leaves_no_lease_behind() -> None:
    store = FakeStore()
    store.gate = asyncio.Event()
    _, gate, _ = _cluster(store)
    waiter = asyncio.create_task(gate.acquire(4))
    await until(lambda: store.batches == [1], what="the acquire call reaches the store")
    waiter.cancel()
    await until(waiter.done)
    store.gate.set()  # the store grants after the caller has gone
    await until(lambda: store.released, what="the orphaned lease goes back to the store")
    assert gate.held == set()
    assert store.leases == set()


async def test_requests_that_arrive_together_share_one_call() -> None:
    store = FakeStore(room=3)
    store.gate = asyncio.Event()
    _, gate, _ = _cluster(store)
    first = asyncio.create_task(gate.acquire(4))
    await until(lambda: store.batches == [1])  # the first call is in flight...
    rest = [asyncio.create_task(gate.acquire(4)) for _ in range(4)]
    await until(lambda: len(gate._asks) == 4, what="the next four wait for the next call")
    store.gate.set()
    results = await asyncio.gather(first, *rest)
    assert store.batches == [1, 4]  # ...and the next four go together in one call
    assert [r is not None for r in results] == [True, True, True, False, False]
    for lease in results[:3]:
        assert lease is not None
        gate.release(lease, lambda: None)
    await until(lambda: len(store.released) == 3, what="the three leases go back")
    assert store.leases == set()


async def test_close_leaves_the_cluster() -> None:
    store = FakeStore()
    cluster, gate, _ = _cluster(store)
    lease = await gate.acquire(4)
    assert lease is not None
    await cluster.close()
    assert store.left == [("small", [lease])]  # heartbeat and leases gone at once


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def test_full_is_believed_for_one_poll_only() -> None:
    store, clock = FakeStore(room=1), Clock()
    gate = ClusterAdmission(store, GatewayMetrics(CollectorRegistry()), clock=clock).pool("p")
    assert await gate.acquire(1) is not None
    assert not gate.may_try(1)  # the cluster said "full" just now
    clock.now += store.settings.poll_s * 2
    assert gate.may_try(1)  # others may have released since: worth asking again


async def test_the_share_before_redis_was_ever_read_uses_fallback_replicas() -> None:
    store = FakeStore()
    store.settings = Cluster(enabled=True, fallback_replicas=3)
    store.up = False
    cluster = ClusterAdmission(store, GatewayMetrics(CollectorRegistry()))
    await cluster.renew_all(["p"])  # Redis down from the start
    gate = cluster.pool("p")
    assert gate.cap(9) == 3
    assert [await gate.acquire(9) is not None for _ in range(4)] == [True, True, True, False]
