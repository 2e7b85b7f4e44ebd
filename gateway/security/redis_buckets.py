"""Per-tenant token buckets in Redis, shared by every gateway replica.

The same algorithm as ``token_buckets.py`` (capacity = the per-minute figure, continuous refill
at capacity / 60 per second, both buckets checked before either is charged, costs above the
capacity charged as the capacity), run as one Lua script so check-and-charge is atomic
across replicas. The clock is the Redis server's ``TIME``, so replicas with skewed clocks
agree. Each bucket is a hash ``{level, updated}`` under ``lg:rl:{<tenant>}:<kind>:<per
minute>`` (the tenant as hash tag keeps a tenant's buckets in one cluster slot), expiring two
minutes after its last charge (a full refill takes one).
"""

from __future__ import annotations

from typing import Any

from redis.asyncio import Redis

from gateway.errors import RateLimited
from gateway.schema import RateLimit

_SCRIPT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local wait = 0
local levels = {}
for i = 1, #KEYS do
  local cap = tonumber(ARGV[3 * i - 2])
  local rate = tonumber(ARGV[3 * i - 1])
  local amount = math.min(tonumber(ARGV[3 * i]), cap)
  local state = redis.call('HMGET', KEYS[i], 'level', 'updated')
  local level = tonumber(state[1]) or cap
  local updated = tonumber(state[2]) or now
  level = math.min(cap, level + math.max(0, now - updated) * rate)
  levels[i] = level
  if amount > level then wait = math.max(wait, (amount - level) / rate) end
end
if wait > 0 then return tostring(wait) end
for i = 1, #KEYS do
  local amount = math.min(tonumber(ARGV[3 * i]), tonumber(ARGV[3 * i - 2]))
  redis.call('HSET', KEYS[i], 'level', tostring(levels[i] - amount), 'updated', tostring(now))
  redis.call('PEXPIRE', KEYS[i], 120000)
end
return '0'
"""


class RedisRateLimiter:
    """Charges tenant requests against buckets kept in Redis."""

    def __init__(self, client: Redis) -> None:
        self._client = client
        self._script = client.register_script(_SCRIPT)

    @classmethod
    def from_url(cls, url: str, timeout_s: float = 0.25) -> RedisRateLimiter:
        # Short timeouts: a slow Redis must not stall requests (the caller falls back).
        client = Redis.from_url(url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s)
        return cls(client)

    async def charge(self, tenant: str, limit: RateLimit, tokens: float) -> None:
        """Charge one request of ``tokens``; raise a 429 with Retry-After when over a limit.
        Redis failures raise ``redis.RedisError`` for the caller to handle."""
        keys: list[str] = []
        args: list[Any] = []
        for kind, per_minute, amount in (
            ("requests", limit.requests_per_minute, 1.0),
            ("tokens", limit.tokens_per_minute, tokens),
        ):
            if per_minute is not None:
                keys.append(f"lg:rl:{{{tenant}}}:{kind}:{per_minute}")
                args += [per_minute, per_minute / 60.0, amount]
        if not keys:
            return
        wait = float(await self._script(keys=keys, args=args))
        if wait > 0:
            raise RateLimited(
                f"Rate limit reached for tenant '{tenant}'; retry in {wait:.1f} s.",
                code="rate_limit_exceeded",
                retry_after_s=wait,
            )

    async def aclose(self) -> None:
        await self._client.aclose()
