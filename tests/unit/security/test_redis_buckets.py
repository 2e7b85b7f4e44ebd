"""Tenant buckets in a real redis-server (started here on a free port), shared by two
limiters as two replicas would share them; Redis going away falls back to local buckets."""

from __future__ import annotations

import pytest

from gateway.errors import RateLimited
from gateway.schema import Auth, RateLimit
from gateway.security.redis_buckets import RedisRateLimiter
from gateway.security.tenant_limits import TenantRateLimits
from loadtests.kit.ports import free_port


async def test_two_replicas_share_a_tenants_buckets(redis_url: str) -> None:
    a, b = RedisRateLimiter.from_url(redis_url), RedisRateLimiter.from_url(redis_url)
    limit = RateLimit(requests_per_minute=2)
    try:
        await a.charge("t", limit, 1)
        await b.charge("t", limit, 1)
        with pytest.raises(RateLimited) as refused:
            await a.charge("t", limit, 1)
        # One request refills every 30 s (Redis's clock moved a little since).
        assert 29.0 < (refused.value.retry_after_s or 0) <= 30.0
        await b.charge("other", limit, 1)  # tenants have their own buckets
    finally:
        await a.aclose()
        await b.aclose()


async def test_tokens_are_checked_before_anything_is_charged(redis_url: str) -> None:
    limiter = RedisRateLimiter.from_url(redis_url)
    limit = RateLimit(requests_per_minute=3, tokens_per_minute=600)
    try:
        await limiter.charge("t", limit, 500)
        with pytest.raises(RateLimited) as refused:
            await limiter.charge("t", limit, 200)
        assert 9.0 < (refused.value.retry_after_s or 0) <= 10.0
        await limiter.charge("t", limit, 50)
        await limiter.charge("t", limit, 1)  # the third: the refusal took no request token
        with pytest.raises(RateLimited):
            await limiter.charge("t", limit, 1)  # three requests per minute
    finally:
        await limiter.aclose()


async def test_redis_down_falls_back_to_local_buckets_and_is_retried_later() -> None:
    now = [0.0]
    limits = TenantRateLimits(lambda: now[0], retry_s=5.0)
    auth = Auth(rate_limit_store="redis", redis_url=f"redis://127.0.0.1:{free_port()}/0")
    limit = RateLimit(requests_per_minute=2)
    try:
        await limits.charge(auth, "t", limit, 1)  # nobody listens: charged locally
        assert limits.fallbacks == 1
        await limits.charge(auth, "t", limit, 1)  # within retry_s: Redis not even tried
        assert limits.fallbacks == 1
        with pytest.raises(RateLimited):
            await limits.charge(auth, "t", limit, 1)  # the local bucket still limits
        now[0] = 30.0
        await limits.charge(auth, "t", limit, 1)  # Redis tried again, fails again
        assert limits.fallbacks == 2
    finally:
        await limits.aclose()
