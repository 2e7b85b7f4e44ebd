"""An entry's evidence in the shared cache, against a real redis-server: a threshold one
replica tightens is what every replica reads; concurrent updates all count; the entry keeps
its expiry; entries stored before evidence existed read as none."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import orjson
import pytest
import redis.asyncio as aioredis
from prometheus_client import CollectorRegistry

from gateway.cache.store.entry import Entry
from gateway.cache.store.evidence import NONE, Evidence
from gateway.cache.store.redis_store import RedisStore
from gateway.metrics import GatewayMetrics
from gateway.schema import Cache, CacheRedis
from tests.support.redis_server import RedisServer, redis_server

PREFIX = "t:cache"


@pytest.fixture
def redis(tmp_path: Path) -> Iterator[RedisServer]:
    with redis_server(tmp_path) as server:
        yield server


def _store(url: str) -> RedisStore:
    settings = Cache(
        enabled=True, store="redis", ttl_s=100, redis=CacheRedis(url=url, key_prefix=PREFIX)
    )
    return RedisStore(settings, metrics=GatewayMetrics(CollectorRegistry()))


def _entry(entry_id: int = 41) -> Entry:
    answer = {"choices": [{"message": {"role": "assistant", "content": "Use the reset link."}}]}
    vector = np.full(4, 0.5, np.float32)
    return Entry(entry_id, "exact-key", "scope", "How do I reset my password?", vector, answer, 5)


async def test_one_replica_tightens_every_replica_reads_it(redis: RedisServer) -> None:
    a, b = _store(redis.url), _store(redis.url)
    await a.put(_entry())
    assert (await b.get(41)) is not None
    updated = await b.update(41, lambda e: e.after(agreed=False, cosine=0.9, margin=0.01))
    assert updated is not None
    assert updated.evidence.disagree == 1
    seen = await a.get(41)
    assert seen is not None
    assert seen.evidence == updated.evidence
    assert seen.evidence.min_cosine == pytest.approx(0.91)
    assert seen.answer == _entry().answer  # the rest of the entry unchanged
    client = aioredis.Redis.from_url(redis.url)
    ttl = await client.pttl(f"{PREFIX}:e:41")
    assert 0 < ttl <= 100_000  # still expires with the entry
    await client.aclose()
    assert await a.update(999, lambda e: e) is None  # gone: nothing to update
    await a.close()
    await b.close()


async def test_concurrent_updates_from_replicas_all_count(redis: RedisServer) -> None:
    """Each lost WATCH means another update went in: 12 updates lose at most 11 times, fewer
    than the store's tries, so none may be dropped."""
    stores = [_store(redis.url) for _ in range(4)]
    await stores[0].put(_entry())

    async def verify(store: RedisStore, i: int) -> None:
        for _ in range(3):
            await store.update(41, lambda e: e.after(agreed=i % 2 == 0, cosine=0.9, margin=0.0))

    await asyncio.gather(*(verify(s, i) for i, s in enumerate(stores)))
    final = await stores[0].get(41)
    assert final is not None
    assert (final.evidence.agree, final.evidence.disagree) == (6, 6)
    for store in stores:
        await store.close()


async def test_an_entry_stored_without_evidence_reads_as_none(redis: RedisServer) -> None:
    old = orjson.loads(_entry().to_json())
    del old["evidence"]  # as the gateway stored entries before verification existed
    client = aioredis.Redis.from_url(redis.url)
    await client.set(f"{PREFIX}:e:41", orjson.dumps(old), px=100_000)
    await client.aclose()
    store = _store(redis.url)
    found = await store.get(41)
    assert found is not None
    assert found.evidence == NONE
    updated = await store.update(41, lambda e: e.after(agreed=True, cosine=0.9, margin=0.01))
    assert updated is not None
    assert updated.evidence == Evidence(agree=1)
    await store.close()
