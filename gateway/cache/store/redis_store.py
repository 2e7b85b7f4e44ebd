"""The shared cache store: entries in Redis, every replica's vector index kept in step.

Layout under ``key_prefix`` (``p``): ``p:e:<id>`` the entry (JSON, with its vector) and
``p:x:<exact key>`` its id, both with the TTL as a Redis expiry; ``p:lru`` a sorted set of
ids by last use (wall-clock seconds), trimmed to ``max_entries`` after each put by popping
the least recently used. Replicas learn of changes on the pub/sub channel ``p:events``:
``+<replica>:<id>`` (added) and ``-<replica>:<id>`` (evicted); each replica applies the
others' messages to its local index and its own at once. At start, and again after a lost
connection, a replica rebuilds its index from a SCAN of ``p:e:*``. Entries that expired in
Redis are dropped from an index when a lookup meets them. An entry's evidence (sampled
verifications, ``evidence.py``) lives in its JSON: ``update`` rewrites it under WATCH (an
optimistic transaction, tried again when another replica changed the entry meanwhile) with
KEEPTTL, so every replica's next read of the entry sees the tightened threshold.

Failure: every command has ``timeout_s``; a failed or timed-out command is a miss (reads)
or a dropped write, counted in ``gateway_cache_store_errors_total{op}``, never an error for
the client. The subscriber reconnects with capped exponential backoff.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

import redis.asyncio as redis
from redis.exceptions import RedisError, WatchError

from gateway.cache.store.entry import Entry
from gateway.cache.store.protocol import Change, IndexListener
from gateway.metrics import GatewayMetrics
from gateway.schema import Cache as CacheSettings

log = logging.getLogger(__name__)

_FAILURES = (RedisError, OSError, TimeoutError, ValueError)
_SCAN_BATCH = 500
# Each lost WATCH means another update of the entry went in meanwhile; losing this many in a
# row takes as many verifications of one entry at once: the update is then dropped (counted).
_UPDATE_TRIES = 16


class RedisStore:
    def __init__(
        self,
        settings: CacheSettings,
        *,
        metrics: GatewayMetrics,
        wall: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        conf = settings.redis
        self._ttl_ms = int(settings.ttl_s * 1000)
        self._max = settings.max_entries
        self._p = conf.key_prefix
        self._channel = f"{self._p}:events"
        self._metrics = metrics
        self._wall = wall
        self._sleep = sleep
        self._me = secrets.token_hex(6)
        self._redis = redis.Redis.from_url(
            conf.url,
            socket_timeout=conf.timeout_s,
            socket_connect_timeout=conf.timeout_s,
            retry_on_timeout=False,
        )
        self._listener: IndexListener | None = None
        self._task: asyncio.Task[None] | None = None
        self._count = 0  # entries this replica knows of (for len)
        self.synced = asyncio.Event()  # set after each full resync (tests)

    def __len__(self) -> int:
        return self._count

    async def start(self, listener: IndexListener) -> None:
        self._listener = listener
        self._task = asyncio.create_task(self._follow(), name="cache-redis-follow")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        with contextlib.suppress(*_FAILURES):
            await self._redis.aclose()

    async def get_exact(self, key: str) -> Entry | None:
        raw = await self._try("get", self._redis.get(f"{self._p}:x:{key}"))
        return None if raw is None else await self.get(int(raw))

    async def get(self, entry_id: int) -> Entry | None:
        pipe = self._redis.pipeline(transaction=False)
        pipe.get(f"{self._p}:e:{entry_id}")
        pipe.zadd(f"{self._p}:lru", {str(entry_id): self._wall()}, xx=True)
        found = await self._try("get", pipe.execute())
        if not found or found[0] is None:
            return None
        try:
            return Entry.from_json(found[0])
        except (ValueError, KeyError, TypeError):
            self._metrics.cache_store_errors.labels("decode").inc()
            return None

    async def put(self, entry: Entry) -> None:
        pipe = self._redis.pipeline(transaction=False)
        pipe.set(f"{self._p}:e:{entry.id}", entry.to_json(), px=self._ttl_ms)
        pipe.set(f"{self._p}:x:{entry.exact}", str(entry.id), px=self._ttl_ms)
        pipe.zadd(f"{self._p}:lru", {str(entry.id): self._wall()})
        pipe.publish(self._channel, f"+{self._me}:{entry.id}")
        pipe.zcard(f"{self._p}:lru")
        done = await self._try("put", pipe.execute())
        if done is None:
            return
        if self._listener is not None:
            self._listener.added(entry)
            self._count += 1
        excess = int(done[-1]) - self._max
        if excess > 0:
            await self._evict(excess)

    async def update(self, entry_id: int, change: Change) -> Entry | None:
        key = f"{self._p}:e:{entry_id}"
        for _ in range(_UPDATE_TRIES):
            try:
                updated: Entry | None = await self._try("update", self._update_once(key, change))
                return updated
            except WatchError:
                continue  # changed meanwhile (another replica's verification): read again
        self._metrics.cache_store_errors.labels("update").inc()
        return None

    async def _update_once(self, key: str, change: Change) -> Entry | None:
        async with self._redis.pipeline(transaction=True) as pipe:
            await pipe.watch(key)
            raw = await pipe.get(key)
            if raw is None:
                return None
            entry = Entry.from_json(raw)
            entry = replace(entry, evidence=change(entry.evidence))
            pipe.multi()  # type: ignore[no-untyped-call]  # redis-py leaves it untyped
            pipe.set(key, entry.to_json(), keepttl=True, xx=True)
            await pipe.execute()
            return entry

    async def _evict(self, count: int) -> None:
        popped = await self._try("evict", self._redis.zpopmin(f"{self._p}:lru", count))
        if not popped:
            return
        ids = [int(member) for member, _ in popped]
        pipe = self._redis.pipeline(transaction=False)
        pipe.delete(*[f"{self._p}:e:{i}" for i in ids])
        for i in ids:
            pipe.publish(self._channel, f"-{self._me}:{i}")
        await self._try("evict", pipe.execute())
        for i in ids:
            self._removed(i)

    async def _follow(self) -> None:
        """Keep the local index in step: resync, then apply events; on failure, again."""
        backoff = 0.1
        while True:
            try:
                async with self._redis.pubsub(ignore_subscribe_messages=True) as pubsub:
                    await pubsub.subscribe(self._channel)
                    await self._resync()  # after subscribing: nothing falls between the two
                    backoff = 0.1
                    async for message in pubsub.listen():
                        await self._apply(message)
            except _FAILURES as exc:
                self._metrics.cache_store_errors.labels("subscribe").inc()
                log.warning("cache: Redis subscription lost (%s); retrying", exc)
            await self._sleep(backoff)
            backoff = min(backoff * 2, 5.0)

    async def _resync(self) -> None:
        entries: list[Entry] = []
        keys: list[bytes] = []
        async for key in self._redis.scan_iter(match=f"{self._p}:e:*", count=_SCAN_BATCH):
            keys.append(key)
            if len(keys) >= _SCAN_BATCH:
                entries += await self._load(keys)
                keys = []
        if keys:
            entries += await self._load(keys)
        if self._listener is not None:
            self._listener.reset(entries)
        self._count = len(entries)
        log.info("cache index synced from Redis: %d entries", len(entries))
        self.synced.set()

    async def _load(self, keys: list[bytes]) -> list[Entry]:
        out = []
        for raw in await self._redis.mget(keys):
            if raw is not None:
                with contextlib.suppress(ValueError, KeyError, TypeError):
                    out.append(Entry.from_json(raw))
        return out

    async def _apply(self, message: dict[str, Any]) -> None:
        data = message.get("data")
        text = data.decode() if isinstance(data, bytes) else str(data)
        sign, (origin, _, ident) = text[:1], text[1:].partition(":")
        if origin == self._me or not ident.isdigit():
            return  # our own change is already applied
        if sign == "-":
            self._removed(int(ident))
            return
        entry = await self.get(int(ident))
        if entry is not None and self._listener is not None:
            self._listener.added(entry)
            self._count += 1
            log.debug("cache: entry %d from replica %s", entry.id, origin)

    def _removed(self, entry_id: int) -> None:
        if self._listener is not None:
            self._listener.removed(entry_id)
            self._count = max(0, self._count - 1)

    async def _try(self, op: str, call: Awaitable[Any]) -> Any:
        try:
            return await call
        except WatchError:
            raise  # not a failure: the caller reads again
        except _FAILURES as exc:
            self._metrics.cache_store_errors.labels(op).inc()
            log.debug("cache: Redis %s failed: %s", op, exc)
            return None
