"""The summary service: never waits, one task per key, checked before it is cached."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from gateway.errors import ServiceUnavailable
from gateway.metrics import GatewayMetrics
from gateway.openai.messages import Message
from gateway.rewrite.history_trim import Compression, Cut
from gateway.rewrite.summaries import SummaryService
from gateway.rewrite.summary_cache import SummaryCache
from gateway.schema import Summary
from tests.unit.rewrite.compress_helpers import WordCounter, msg

SETTINGS = Summary(enabled=True, pool="small", max_tokens=64, timeout_s=5, max_input_tokens=100)
DROPPED = [msg("assistant", "Send 3 crates to Alice Smith."), msg("user", "Booked as ORD-9.")]
GOOD = "Alice Smith gets 3 crates, booking ORD-9."


def dropping(dropped: list[Message], *, after: tuple[Message, ...] = ()) -> Compression:
    """A compression of system, first user, ``dropped``, ``after``, last user message that
    drops ``dropped`` (and ``after`` too when given: a later step of the same conversation)."""
    head: list[Message] = [msg("system", "s"), msg("user", "first")]
    source = (*head, *dropped, *after, msg("user", "last"))
    first = Cut(start=2, end=2 + len(dropped), pinned=(), turns=1)
    if not after:
        return Compression(source, source, 0, fits=True, cut=first)
    second = Cut(start=2, end=2 + len(dropped) + len(after), pinned=(), turns=2)
    return Compression(source, source, 0, fits=True, cut=second, earlier=(first,))


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
    return SummaryService(upstream, metrics, clock=lambda: 0.0, cache=cache, **kwargs), metrics


def _count(metrics: GatewayMetrics, result: str) -> float:
    value = metrics.registry.get_sample_value(
        "gateway_compression_summaries_total", {"result": result}
    )
    return value or 0.0


async def test_a_miss_starts_one_task_and_a_later_request_finds_the_summary() -> None:
    upstream = Upstream(GOOD)
    service, metrics = _service(upstream)
    counter = WordCounter()
    assert service.find("s", dropping(DROPPED), SETTINGS, counter) is None
    assert service.find("s", dropping(DROPPED), SETTINGS, counter) is None  # still being written
    await asyncio.sleep(0)  # let the task send its request
    assert len(upstream.calls) == 1
    pool, body = upstream.calls[0]
    assert pool == "small"
    assert body["max_tokens"] == 64
    upstream.release.set()
    await service.wait_idle()
    assert service.find("s", dropping(DROPPED), SETTINGS, counter) == GOOD
    assert service.find("other-session", dropping(DROPPED), SETTINGS, counter) is None
    assert _count(metrics, "stored") == 1


async def test_a_summary_that_loses_a_fact_is_refused_and_remembered() -> None:
    upstream = Upstream("Alice Smith gets some crates, booking ORD-9.")
    service, metrics = _service(upstream)
    upstream.release.set()
    assert service.find("s", dropping(DROPPED), SETTINGS, WordCounter()) is None
    await service.wait_idle()
    assert service.find("s", dropping(DROPPED), SETTINGS, WordCounter()) is None
    assert len(upstream.calls) == 1  # not asked again
    assert _count(metrics, "check_failed") == 1
    failures = metrics.registry.get_sample_value("gateway_compression_summary_check_failures_total")
    assert failures == 1


async def test_errors_are_counted_and_not_cached() -> None:
    upstream = Upstream(ServiceUnavailable("busy", code="pool_saturated"))
    service, metrics = _service(upstream)
    upstream.release.set()
    service.find("s", dropping(DROPPED), SETTINGS, WordCounter())
    await service.wait_idle()
    assert _count(metrics, "error") == 1
    service.find("s", dropping(DROPPED), SETTINGS, WordCounter())
    await service.wait_idle()
    assert len(upstream.calls) == 2


async def test_bounds_skip_work_instead_of_queueing_it() -> None:
    upstream = Upstream(GOOD)
    service, metrics = _service(upstream, max_pending=1)
    counter = WordCounter()
    service.find("s1", dropping(DROPPED), SETTINGS, counter)
    service.find("s2", dropping(DROPPED), SETTINGS, counter)
    assert service.pending == 1
    assert _count(metrics, "skipped_busy") == 1
    long_run = [msg("assistant", "word " * 200)]
    await service.close()
    assert service.find("s3", dropping(long_run), SETTINGS, counter) is None
    assert _count(metrics, "skipped_too_long") == 1


async def test_timeouts_end_the_task() -> None:
    upstream = Upstream(GOOD)  # never released
    service, metrics = _service(upstream)
    fast = SETTINGS.model_copy(update={"timeout_s": 0.001})
    service.find("s", dropping(DROPPED), fast, WordCounter())
    await service.wait_idle()
    assert _count(metrics, "timeout") == 1
    assert service.pending == 0


async def test_a_later_step_extends_the_earlier_summary() -> None:
    upstream = Upstream(GOOD)
    service, metrics = _service(upstream)
    upstream.release.set()
    counter = WordCounter()
    service.find("s", dropping(DROPPED), SETTINGS, counter)
    await service.wait_idle()
    later = (msg("assistant", "Also 2 pallets for Bob Jones."), msg("user", "Fine."))
    upstream.answer = GOOD + " Bob Jones gets 2 pallets."
    assert service.find("s", dropping(DROPPED, after=later), SETTINGS, counter) is None
    await service.wait_idle()
    _, body = upstream.calls[1]
    asked = body["messages"][1]["content"]
    assert asked.startswith(f"Summary so far:\n{GOOD}\n")
    assert "Bob Jones" in asked
    assert "Send 3 crates" not in asked  # the earlier messages are not sent again
    found = service.find("s", dropping(DROPPED, after=later), SETTINGS, counter)
    assert found == GOOD + " Bob Jones gets 2 pallets."
    assert _count(metrics, "stored") == 2


async def test_an_extension_is_checked_against_everything_it_covers() -> None:
    upstream = Upstream(GOOD)
    service, metrics = _service(upstream)
    upstream.release.set()
    service.find("s", dropping(DROPPED), SETTINGS, WordCounter())
    await service.wait_idle()
    upstream.answer = "Bob Jones gets 2 pallets."  # lost the earlier facts
    later = (msg("assistant", "Also 2 pallets for Bob Jones."), msg("user", "Fine."))
    service.find("s", dropping(DROPPED, after=later), SETTINGS, WordCounter())
    await service.wait_idle()
    assert service.find("s", dropping(DROPPED, after=later), SETTINGS, WordCounter()) is None
    assert _count(metrics, "check_failed") == 1


async def test_an_unexpected_failure_is_logged_and_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    upstream = Upstream(RuntimeError("bug"))
    service, metrics = _service(upstream)
    upstream.release.set()
    service.find("s", dropping(DROPPED), SETTINGS, WordCounter())
    await service.wait_idle()
    assert _count(metrics, "error") == 1
    assert "writing a summary failed" in caplog.text
    assert service.pending == 0
