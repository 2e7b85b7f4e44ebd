"""Per-tenant rate limits: two token buckets per tenant, requests and tokens per minute.

Algorithm: a token bucket of capacity ``C`` (the per-minute figure) refilled continuously at
``C / 60`` per second from an injected clock. A request needs 1 request token and ``cost``
tokens (prompt estimate at four characters per token plus ``max_tokens``, default 256; a cost
above the capacity is charged as the capacity so a big request can still pass on a full
bucket). Both buckets are checked before either is charged, so a refusal costs nothing. A
refusal's ``Retry-After`` is the time until the emptier bucket has refilled enough.

State is per process (memory). Buckets are keyed by tenant and limit, so a policy edit that
changes a tenant's limit starts that bucket afresh.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gateway.errors import RateLimited
from gateway.schema import RateLimit


@dataclass(slots=True)
class TokenBucket:
    capacity: float
    per_second: float
    level: float
    updated: float

    @classmethod
    def full(cls, per_minute: float, now: float) -> TokenBucket:
        return cls(per_minute, per_minute / 60.0, per_minute, now)

    def refill(self, now: float) -> None:
        elapsed = max(0.0, now - self.updated)
        self.level = min(self.capacity, self.level + elapsed * self.per_second)
        self.updated = now

    def wait_for(self, amount: float) -> float:
        """Seconds until ``amount`` is available (0 when it is now); call ``refill`` first."""
        need = min(amount, self.capacity) - self.level
        return 0.0 if need <= 0 else need / self.per_second

    def take(self, amount: float) -> None:
        self.level -= min(amount, self.capacity)


class RateLimiter:
    """The memory store of tenant buckets."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._buckets: dict[tuple[str, str, int], TokenBucket] = {}

    def charge(self, tenant: str, limit: RateLimit, tokens: float) -> None:
        """Charge one request of ``tokens``; raise a 429 with Retry-After when over a limit."""
        now = self._clock()
        wanted = [
            (self._bucket(tenant, "requests", limit.requests_per_minute, now), 1.0),
            (self._bucket(tenant, "tokens", limit.tokens_per_minute, now), tokens),
        ]
        charges = [(bucket, amount) for bucket, amount in wanted if bucket is not None]
        wait = max((bucket.wait_for(amount) for bucket, amount in charges), default=0.0)
        if wait > 0:
            raise RateLimited(
                f"Rate limit reached for tenant '{tenant}'; retry in {wait:.1f} s.",
                code="rate_limit_exceeded",
                retry_after_s=wait,
            )
        for bucket, amount in charges:
            bucket.take(amount)

    def _bucket(
        self, tenant: str, kind: str, per_minute: int | None, now: float
    ) -> TokenBucket | None:
        if per_minute is None:
            return None
        key = (tenant, kind, per_minute)
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = TokenBucket.full(per_minute, now)
        bucket.refill(now)
        return bucket
