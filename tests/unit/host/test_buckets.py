"""Tenant rate limits held across the workers of one host (two attachments of one board)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.errors import RateLimited
from gateway.host.board import Board
from gateway.host.buckets import HostRateLimiter
from gateway.schema import RateLimit


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _workers(tmp_path: Path, clock: Clock) -> tuple[HostRateLimiter, HostRateLimiter]:
    first = Board.create(tmp_path, rows=2, slots=16)
    second = Board.attach(tmp_path)
    first.claim_row(1)
    second.claim_row(1)
    return HostRateLimiter(first, clock), HostRateLimiter(second, clock)


def test_a_tenants_limit_holds_across_workers(tmp_path: Path) -> None:
    clock = Clock()
    a, b = _workers(tmp_path, clock)
    limit = RateLimit(requests_per_minute=3)
    a.charge("acme", limit, 10)
    b.charge("acme", limit, 10)
    a.charge("acme", limit, 10)
    with pytest.raises(RateLimited) as refused:
        b.charge("acme", limit, 10)
    assert refused.value.retry_after_s == pytest.approx(20.0)  # one request refills in 20 s
    b.charge("other", limit, 10)  # another tenant's bucket is its own
    clock.now += 20.0
    b.charge("acme", limit, 10)
    with pytest.raises(RateLimited):
        a.charge("acme", limit, 10)


@pytest.mark.parametrize(
    ("limit", "tokens", "charges", "refused_at"),
    [
        (RateLimit(tokens_per_minute=100), 40, 4, 2),  # 40 + 40, then 20 left
        (RateLimit(tokens_per_minute=100), 500, 2, 1),  # charged as the capacity
        (RateLimit(requests_per_minute=10, tokens_per_minute=100), 60, 3, 1),
        (RateLimit(), 10**6, 3, None),  # no limit set
    ],
)
def test_both_buckets_are_checked_before_either_is_charged(
    tmp_path: Path, limit: RateLimit, tokens: float, charges: int, refused_at: int | None
) -> None:
    a, b = _workers(tmp_path, Clock())
    refusals = []
    for i in range(charges):
        try:
            (a, b)[i % 2].charge("t", limit, tokens)
        except RateLimited:
            refusals.append(i)
    assert (refusals[0] if refusals else None) == refused_at
