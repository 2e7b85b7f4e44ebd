"""The summary service: never waits, one task per key, checked before it is cached."""

from __future__ import annotations

import asyncio
from typing import Any

from prometheus_client import CollectorRegistry

from gateway.errors import ServiceUnavailable
from gateway.metrics import GatewayMetrics
from gateway.policy.schema import Summary
from gateway.rewrite.summary_cache import SummaryCache
from gateway.summaries import SummaryService
from tests.unit.rewrite.compress_helpers import WordCounter, msg

SETTINGS = Summary(enabled=True, pool="small", max_tokens=64, timeout_s=5, max_input_tokens=100)
DROPPED = [msg("user", "Send 3 crates to Alice Smith."), msg("assistant", "Booked as ORD-9.")]
GOOD = "Alice Smith gets 3 crates, booking ORD-9."


class Upstream:
    """A scripted summary pool: answers when the test releases it."""

    def __init__(self, answer: str | Exception) -> None:
        self.answer = answer
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.release = asyncio.Event()

    async def __call__(self, pool: str, body: dict[str, Any]) -> str:
        self.calls.append((pool, body))
        await self.release.wait()
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def _service(upstream: Upstream, **kwargs: Any) -> tuple[SummaryService, GatewayMetrics]:
    metrics = GatewayMetrics(CollectorRegistry())
    cache = SummaryCache(clock=lambda: 0.0)
    return SummaryService(cache, upstream, metrics, **kwargs), metrics


def _count(metrics: GatewayMetrics, result: str) -> float:
    value = metrics.registry.get_sample_value(
        "gateway_compression_summaries_total", {"result": result}
    )
    return value or 0.0


async def test_a_miss_starts_one_task_and_a_later_request_finds_the_summary() -> None:
    upstream = Upstream(GOOD)
    service, metrics = _service(upstream)
    counter = WordCounter()
    assert service.find("s", DROPPED, SETTINGS, counter) is None
    assert service.find("s", DROPPED, SETTINGS, counter) is None  # still being written
    await asyncio.sleep(0)  # let the task send its request
    assert len(upstream.calls) == 1
    pool, body = upstream.calls[0]
    assert pool == "small"
    assert body["max_tokens"] == 64
    upstream.release.set()
    await service.wait_idle()
    assert service.find("s", DROPPED, SETTINGS, counter) == GOOD
    assert service.find("other-session", DROPPED, SETTINGS, counter) is None
    assert _count(metrics, "stored") == 1


async def test_a_summary_that_loses_a_fact_is_refused_and_remembered() -> None:
    upstream = Upstream("Alice Smith gets some crates, booking ORD-9.")
    service, metrics = _service(upstream)
    upstream.release.set()
    assert service.find("s", DROPPED, SETTINGS, WordCounter()) is None
    await service.wait_idle()
    assert service.find("s", DROPPED, SETTINGS, WordCounter()) is None
    assert len(upstream.calls) == 1  # not asked again
    assert _count(metrics, "check_failed") == 1
    failures = metrics.registry.get_sample_value("gateway_compression_summary_check_failures_total")
    assert failures == 1


async def test_errors_are_counted_and_not_cached() -> None:
    upstream = Upstream(ServiceUnavailable("busy", code="pool_saturated"))
    service, metrics = _service(upstream)
    upstream.release.set()
    service.find("s", DROPPED, SETTINGS, WordCounter())
    await service.wait_idle()
    assert _count(metrics, "error") == 1
    service.find("s", DROPPED, SETTINGS, WordCounter())
    await service.wait_idle()
    assert len(upstream.calls) == 2


async def test_bounds_skip_work_instead_of_queueing_it() -> None:
    upstream = Upstream(GOOD)
    service, metrics = _service(upstream, max_pending=1)
    counter = WordCounter()
    service.find("s1", DROPPED, SETTINGS, counter)
    service.find("s2", DROPPED, SETTINGS, counter)
    assert service.pending == 1
    assert _count(metrics, "skipped_busy") == 1
    long_run = [msg("user", "word " * 200)]
    await service.close()
    assert service.find("s3", long_run, SETTINGS, counter) is None
    assert _count(metrics, "skipped_too_long") == 1


async def test_timeouts_end_the_task() -> None:
    upstream = Upstream(GOOD)  # never released
    service, metrics = _service(upstream)
    fast = SETTINGS.model_copy(update={"timeout_s": 0.001})
    service.find("s", DROPPED, fast, WordCounter())
    await service.wait_idle()
    assert _count(metrics, "timeout") == 1
    assert service.pending == 0
