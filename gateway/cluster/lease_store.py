"""The Redis edge of cluster admission: one round trip per call, each bounded by a timeout.

The scripts and their meaning are in ``leases``; this module only sends them. Every call
raises ``StoreUnavailable`` for any Redis trouble (refused or dropped connection, timeout,
an error reply such as ``LOADING``), which the caller turns into the local fallback.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import Protocol, TypeVar

import redis.asyncio as redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from gateway.cluster.leases import (
    ACQUIRE,
    RENEW,
    AcquireReply,
    RenewReply,
    acquire_reply,
    pool_keys,
    renew_reply,
)
from gateway.schema import Cluster

T = TypeVar("T")


class StoreUnavailable(Exception):
    """Redis could not answer in time; the reason is chained."""


class LeaseStore(Protocol):
    """What cluster admission needs from its store (Redis here, a fake in unit tests)."""

    settings: Cluster
    replica: str

    async def acquire(
        self, pool: str, leases: Sequence[str], limit: int, held: int
    ) -> AcquireReply: ...

    async def release(self, pool: str, leases: Collection[str]) -> None: ...

    async def renew(self, pool: str, leases: Collection[str], readd: bool) -> RenewReply: ...

    async def leave(self, pool: str, leases: Collection[str]) -> None: ...

    async def close(self) -> None: ...


class RedisLeaseStore:
    def __init__(self, settings: Cluster, replica: str, client: redis.Redis | None = None) -> None:
        self.settings = settings
        self.replica = replica
        # No retries inside the client: a failed call falls back at once instead of waiting
        # for backoffs, and the next call (or renewal) tries a fresh connection.
        self._client = client or redis.Redis.from_url(
            settings.redis_url,
            socket_timeout=settings.op_timeout_s,
            socket_connect_timeout=settings.op_timeout_s,
            retry=Retry(NoBackoff(), 0),
        )
        self._acquire = self._client.register_script(ACQUIRE)
        self._renew = self._client.register_script(RENEW)
        self._ttl_ms = _ms(settings.lease_ttl_s)
        # A waiting mark outlives a few polls, so it holds while the replica keeps retrying.
        self._wait_ttl_ms = _ms(max(4 * settings.poll_s, 2 * settings.op_timeout_s))
        self._key_ttl_ms = 2 * self._ttl_ms  # abandoned keys vanish on their own

    async def acquire(
        self, pool: str, leases: Sequence[str], limit: int, held: int
    ) -> AcquireReply:
        """Ask for a batch of leases; the first ``reply.granted`` of them are granted."""
        args: list[str | int] = [self.replica, limit, held, self._ttl_ms, self._wait_ttl_ms]
        args += [self._key_ttl_ms, *leases]
        raw = await self._call(self._acquire(keys=self._keys(pool), args=args))
        return _parse(acquire_reply, raw)

    async def release(self, pool: str, leases: Collection[str]) -> None:
        await self._call(self._client.zrem(self._keys(pool)[0], *leases))

    async def renew(self, pool: str, leases: Collection[str], readd: bool) -> RenewReply:
        leases_key, _, replicas_key = self._keys(pool)
        args: list[str | int] = [self.replica, self._ttl_ms, self._key_ttl_ms, int(readd)]
        args += leases
        raw = await self._call(self._renew(keys=[leases_key, replicas_key], args=args))
        return _parse(renew_reply, raw)

    async def leave(self, pool: str, leases: Collection[str]) -> None:
        """Drop this replica's heartbeat and leases (a clean shutdown)."""
        leases_key, waiting_key, replicas_key = self._keys(pool)
        pipe = self._client.pipeline(transaction=False)
        pipe.zrem(replicas_key, self.replica)
        pipe.zrem(waiting_key, self.replica)
        if leases:
            pipe.zrem(leases_key, *leases)
        await self._call(pipe.execute())

    async def close(self) -> None:
        await self._call(self._client.aclose())

    def _keys(self, pool: str) -> list[str]:
        return list(pool_keys(self.settings.key_prefix, pool))

    async def _call(self, call: Awaitable[T]) -> T:
        try:
            async with asyncio.timeout(self.settings.op_timeout_s):
                return await call
        except (RedisError, OSError, TimeoutError) as exc:
            detail = f": {exc}" if str(exc) else ""
            raise StoreUnavailable(f"{type(exc).__name__}{detail}") from exc


def _parse(parse: Callable[[object], T], raw: object) -> T:
    try:
        return parse(raw)
    except (ValueError, TypeError) as exc:
        raise StoreUnavailable(f"unexpected reply from Redis: {exc}") from exc


def _ms(seconds: float) -> int:
    return max(1, round(seconds * 1000))
