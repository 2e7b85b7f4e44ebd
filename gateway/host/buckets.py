"""Tenant rate limits shared by the workers of one host, in the host board.

The algorithm of ``security/token_buckets.py`` (capacity = the per-minute figure, continuous
refill at capacity / 60 per second, both buckets checked before either is charged, a cost
above the capacity charged as the capacity), with each bucket's level and last update in the
board's shared cells of the name ``r:<tenant>:<kind>:<per minute>``, read and charged under
the board's lock, so a tenant's limit holds across the workers. A cell never written
(``updated`` 0) is a full bucket. The clock must be the host's (``time.perf_counter`` and
``time.monotonic`` are, on Linux: ``CLOCK_MONOTONIC``).
"""

from __future__ import annotations

from collections.abc import Callable

from gateway.errors import RateLimited
from gateway.host.board import Board
from gateway.schema import RateLimit
from gateway.security.token_buckets import TokenBucket

LEVEL, UPDATED = 0, 1


class HostRateLimiter:
    """Charges tenant requests against buckets on the host board."""

    def __init__(self, board: Board, clock: Callable[[], float]) -> None:
        self._board = board
        self._clock = clock

    def charge(self, tenant: str, limit: RateLimit, tokens: float) -> None:
        """Charge one request of ``tokens``; raise a 429 with Retry-After when over a limit."""
        wanted = [
            (kind, per_minute, amount)
            for kind, per_minute, amount in (
                ("requests", limit.requests_per_minute, 1.0),
                ("tokens", limit.tokens_per_minute, tokens),
            )
            if per_minute is not None
        ]
        if not wanted:
            return
        board = self._board
        slots = [board.slot(f"r:{tenant}:{kind}:{per}") for kind, per, _ in wanted]
        with board.lock():
            now = self._clock()
            buckets = [
                self._bucket(slot, per, now)
                for slot, (_, per, _) in zip(slots, wanted, strict=True)
            ]
            amounts = [amount for _, _, amount in wanted]
            wait = max(b.wait_for(a) for b, a in zip(buckets, amounts, strict=True))
            if wait <= 0:
                for slot, bucket, amount in zip(slots, buckets, amounts, strict=True):
                    bucket.take(amount)
                    board.put_shared(slot, LEVEL, bucket.level)
                    board.put_shared(slot, UPDATED, bucket.updated)
        if wait > 0:
            raise RateLimited(
                f"Rate limit reached for tenant '{tenant}'; retry in {wait:.1f} s.",
                code="rate_limit_exceeded",
                retry_after_s=wait,
            )

    def _bucket(self, slot: int, per_minute: int, now: float) -> TokenBucket:
        updated = self._board.shared(slot, UPDATED)
        if updated == 0.0:
            bucket = TokenBucket.full(per_minute, now)
        else:
            level = self._board.shared(slot, LEVEL)
            bucket = TokenBucket(float(per_minute), per_minute / 60.0, level, updated)
        bucket.refill(now)
        return bucket
