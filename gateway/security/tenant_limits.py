"""The tenant rate limits the request path calls: the store the policy names.

``auth.rate_limit_store: memory`` (default) keeps buckets in the process; ``redis`` shares them
between replicas through ``auth.redis_url``. When Redis fails (down, slow, refused), the
request is charged to the memory buckets instead, Redis is left alone for ``retry_s`` (so a
hung Redis costs one timeout per ``retry_s``, not one per request) and a warning is logged
at most once per ``warn_every_s``: losing Redis degrades to per-replica limits, it never
fails requests. With several workers on one host (``serve --workers``) the local buckets
are the host's (``host/buckets.py``, given as ``local``): memory then means this host.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

from redis import RedisError

from gateway.schema import Auth, RateLimit
from gateway.security.redis_buckets import RedisRateLimiter
from gateway.security.token_buckets import RateLimiter

log = logging.getLogger(__name__)


class LocalBuckets(Protocol):
    """Buckets kept on this host: the process's (``RateLimiter``) or its workers'."""

    def charge(self, tenant: str, limit: RateLimit, tokens: float) -> None: ...


class TenantRateLimits:
    def __init__(
        self,
        clock: Callable[[], float],
        warn_every_s: float = 30.0,
        retry_s: float = 5.0,
        local: LocalBuckets | None = None,
    ) -> None:
        self._clock = clock
        self._retry_s = retry_s
        self._skip_until = float("-inf")
        self.memory: LocalBuckets = RateLimiter(clock) if local is None else local
        self._redis: tuple[str, RedisRateLimiter] | None = None
        self._warn_every_s = warn_every_s
        self._warned_at: float | None = None
        self.fallbacks = 0

    async def charge(self, auth: Auth, tenant: str, limit: RateLimit, tokens: float) -> None:
        url = auth.redis_url if auth.rate_limit_store == "redis" else None
        if url is not None and self._clock() >= self._skip_until:
            try:
                await self._redis_for(url).charge(tenant, limit, tokens)
                return
            except (RedisError, OSError) as exc:
                self._fell_back(exc)
        self.memory.charge(tenant, limit, tokens)

    def _redis_for(self, url: str) -> RedisRateLimiter:
        if self._redis is None or self._redis[0] != url:
            # The old client (if the URL changed on reload) closes with the process.
            self._redis = (url, RedisRateLimiter.from_url(url))
        return self._redis[1]

    def _fell_back(self, exc: Exception) -> None:
        self.fallbacks += 1
        now = self._clock()
        self._skip_until = now + self._retry_s
        if self._warned_at is None or now - self._warned_at >= self._warn_every_s:
            self._warned_at = now
            # The exception's type only: its text may hold the Redis URL with a password.
            log.warning("rate limits: Redis failed (%s), using local buckets", type(exc).__name__)

    async def aclose(self) -> None:
        if self._redis is not None:
            await self._redis[1].aclose()
            self._redis = None
