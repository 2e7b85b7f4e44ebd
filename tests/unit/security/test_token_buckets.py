import pytest

from gateway.errors import RateLimited
from gateway.schema import RateLimit
from gateway.security.token_buckets import RateLimiter, TokenBucket


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_requests_per_minute_refuse_with_retry_after_of_the_refill_time() -> None:
    clock = Clock()
    limiter = RateLimiter(clock)
    limit = RateLimit(requests_per_minute=2)
    limiter.charge("t", limit, 10)
    limiter.charge("t", limit, 10)
    with pytest.raises(RateLimited) as refused:
        limiter.charge("t", limit, 10)
    # One request refills every 30 s.
    assert refused.value.retry_after_s == pytest.approx(30.0)
    assert refused.value.response_headers()["retry-after"] == "30"
    assert refused.value.http_status() == 429
    clock.now += 10
    with pytest.raises(RateLimited) as again:
        limiter.charge("t", limit, 10)
    assert again.value.retry_after_s == pytest.approx(20.0)
    clock.now += 20
    limiter.charge("t", limit, 10)


def test_tokens_per_minute_and_a_refusal_charges_nothing() -> None:
    clock = Clock()
    limiter = RateLimiter(clock)
    limit = RateLimit(requests_per_minute=100, tokens_per_minute=600)  # 10 tokens/s
    limiter.charge("t", limit, 500)
    with pytest.raises(RateLimited) as refused:
        limiter.charge("t", limit, 200)
    assert refused.value.retry_after_s == pytest.approx(10.0)
    clock.now += 10
    limiter.charge("t", limit, 200)  # the refusal took no request token and no tokens


def test_a_request_bigger_than_the_bucket_passes_on_a_full_bucket() -> None:
    limiter = RateLimiter(Clock())
    limit = RateLimit(tokens_per_minute=100)
    limiter.charge("t", limit, 10_000)
    with pytest.raises(RateLimited):
        limiter.charge("t", limit, 1)


def test_tenants_have_their_own_buckets_and_no_limit_means_no_bucket() -> None:
    limiter = RateLimiter(Clock())
    limit = RateLimit(requests_per_minute=1)
    limiter.charge("a", limit, 1)
    limiter.charge("b", limit, 1)
    for _ in range(100):
        limiter.charge("c", RateLimit(), 1)


def test_bucket_never_exceeds_capacity() -> None:
    bucket = TokenBucket.full(60, now=0.0)
    bucket.take(60)
    bucket.refill(1e9)
    assert bucket.level == 60
