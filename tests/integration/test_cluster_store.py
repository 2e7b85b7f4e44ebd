"""The lease scripts against a real redis-server: grants, fairness, renewal, expiry."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.cluster.lease_store import RedisLeaseStore, StoreUnavailable
from gateway.schema import Cluster
from loadtests.kit.ports import free_port
from tests.support.redis_server import RedisServer, redis_server


@pytest.fixture
def redis(tmp_path: Path) -> Iterator[RedisServer]:
    with redis_server(tmp_path) as server:
        yield server


def _store(url: str, replica: str, **settings: float) -> RedisLeaseStore:
    base = {"lease_ttl_s": 10.0, "renew_interval_s": 1.0, "op_timeout_s": 1.0}
    config = Cluster(enabled=True, redis_url=url, key_prefix="t", **{**base, **settings})
    return RedisLeaseStore(config, replica)


async def test_grants_up_to_the_limit_then_refuses(redis: RedisServer) -> None:
    store = _store(redis.url, "a")
    await store.renew("p", [], readd=False)
    granted = [(await store.acquire("p", [f"a:{i}"], 3, i)).granted for i in range(4)]
    assert granted == [1, 1, 1, 0]
    await store.release("p", ["a:0"])
    reply = await store.acquire("p", ["a:8", "a:9"], 3, 2)
    assert (reply.granted, reply.leases, reply.replicas) == (1, 3, 1)  # the first of the batch
    await store.release("p", ["a:1", "a:2", "a:8"])
    reply = await store.acquire("p", ["x", "y", "z", "w"], 3, 0)
    assert (reply.granted, reply.leases) == (3, 3)
    await store.close()


@pytest.mark.parametrize(
    ("held_a", "b_waits", "a_granted"),
    [
        (1, True, 1),  # under its fair share (2 of 4): always
        (2, False, 1),  # at its share, nobody else waits: work-conserving
        (2, True, 0),  # at its share while b waits: b goes first
    ],
)
async def test_past_the_fair_share_only_while_nobody_waits(
    redis: RedisServer, held_a: int, b_waits: bool, a_granted: int
) -> None:
    a, b = _store(redis.url, "a"), _store(redis.url, "b")
    await a.renew("p", [], readd=False)
    await b.renew("p", [], readd=False)  # two live replicas: fair share 2 of limit 4
    assert (await a.acquire("p", [f"a:{i}" for i in range(held_a)], 4, 0)).granted == held_a
    b_leases = [f"b:{i}" for i in range(4 - held_a)]  # b fills the rest of the cluster
    assert (await b.acquire("p", b_leases, 4, 0)).granted == len(b_leases)
    if b_waits:
        assert (await b.acquire("p", ["b:x"], 4, 4 - held_a)).granted == 0  # marks b waiting
    await b.release("p", ["b:0"])  # one slot frees
    reply = await a.acquire("p", ["a:x", "a:y"], 4, held_a)
    assert reply.granted == a_granted
    await a.close()
    await b.close()


async def test_a_dead_replicas_leases_expire_and_renewal_keeps_live_ones(
    redis: RedisServer,
) -> None:
    live = _store(redis.url, "live", lease_ttl_s=0.3, renew_interval_s=0.1)
    dead = _store(redis.url, "dead", lease_ttl_s=0.3, renew_interval_s=0.1)
    assert (await live.acquire("p", ["live:0"], 2, 0)).granted == 1
    assert (await dead.acquire("p", ["dead:0"], 2, 0)).granted == 1
    assert (await live.acquire("p", ["live:1"], 2, 1)).granted == 0
    # Only the live replica renews; the dead one's lease expires on the server's clock.
    async with asyncio.timeout(5):
        while True:
            reply = await live.renew("p", ["live:0"], readd=False)
            if reply.leases == 1:
                break
            await asyncio.sleep(0.05)
    assert (await live.acquire("p", ["live:1"], 2, 1)).granted == 1
    await live.close()
    await dead.close()


async def test_renewal_readds_leases_only_when_asked(redis: RedisServer) -> None:
    store = _store(redis.url, "a")
    await store.renew("p", [], readd=False)  # the heartbeat: this replica is known
    assert (await store.renew("p", ["a:0", "a:1"], readd=False)).leases == 0
    assert (await store.renew("p", ["a:0", "a:1"], readd=True)).leases == 2
    await store.leave("p", ["a:0", "a:1"])
    reply = await store.renew("p", [], readd=False)
    assert (reply.leases, reply.replicas) == (0, 1)
    await store.close()


async def test_renewal_readds_leases_a_restarted_redis_lost(redis: RedisServer) -> None:
    store = _store(redis.url, "a")
    assert (await store.acquire("p", ["a:0", "a:1"], 4, 0)).granted == 2
    assert (await store.renew("p", ["a:0", "a:1"], readd=False)).leases == 2
    redis.stop()
    redis.start()  # empty: no persistence
    with pytest.raises(StoreUnavailable):  # the pooled connection died with the server
        await store.renew("p", ["a:0", "a:1"], readd=False)
    reply = await store.renew("p", ["a:0", "a:1"], readd=False)
    assert (reply.leases, reply.replicas) == (2, 1)  # heartbeat was gone: leases re-added
    await store.close()


async def test_no_server_is_store_unavailable_not_a_hang() -> None:
    store = _store(f"redis://127.0.0.1:{free_port()}/0", "a", op_timeout_s=0.2)
    with pytest.raises(StoreUnavailable):
        await store.acquire("p", ["a:0"], 1, 0)
    with pytest.raises(StoreUnavailable):
        await store.renew("p", [], readd=False)
