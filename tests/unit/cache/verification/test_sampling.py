"""Sampled verification through a real ResponseCache (stand-in encoder, memory store): the
draw, the bound, the verdict, the entry's tightened threshold, cancellation."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from gateway.cache.response_cache import Lookup, ResponseCache
from gateway.cache.store.entry import Entry
from gateway.cache.store.evidence import Evidence
from gateway.cache.store.memory_store import MemoryStore
from gateway.cache.verification.sampling import NoAnswer, Verifications
from gateway.embedding import EmbedderSettings, EmbedderSlot
from gateway.metrics import GatewayMetrics
from gateway.schema import Cache, CacheVerify, SemanticCache
from tests.unit.cache.test_response_cache import ANSWER, WordEncoder

STORED = "How do I reset my password?"
PARAPHRASE = "how reset my password"  # cosine 0.89 with STORED (WordEncoder)
CLOSER = "how do reset my password"  # the same words as STORED: cosine 1.0, not exact


def _answer(text: str) -> dict[str, Any]:
    message = {"role": "assistant", "content": text}
    return {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}


async def _cache(
    metrics: GatewayMetrics, draw: float = 0.0, **verify: Any
) -> tuple[ResponseCache, MemoryStore]:
    slot = EmbedderSlot(EmbedderSettings(), loader=lambda _: WordEncoder())
    slot.start()
    assert await slot.ready()
    semantic = SemanticCache(threshold=0.8, verify=CacheVerify(**verify))
    store = MemoryStore(ttl_s=60, max_entries=100, clock=lambda: 0.0)
    cache = ResponseCache(
        Cache(enabled=True, semantic=semantic), store, slot, metrics, draw=lambda: draw
    )
    await cache.start()
    lookup = await cache.lookup("chat", "fast", _body(STORED), {})
    capture = cache.capture(lookup, "chat")
    assert capture is not None
    capture.whole(ANSWER)
    await cache.settle()
    return cache, store


def _body(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}], "temperature": 0}


async def _ask(cache: ResponseCache, text: str) -> Lookup:
    return await cache.lookup("chat", "fast", _body(text), {})


def _backend(answer: dict[str, Any], calls: list[int]) -> Callable[[], Awaitable[dict[str, Any]]]:
    async def ask() -> dict[str, Any]:
        calls.append(1)
        return answer

    return ask


def _count(metrics: GatewayMetrics, outcome: str) -> float:
    value: float = metrics.cache_verifications.labels(outcome)._value.get()
    return value


@pytest.mark.parametrize(
    ("sample", "draw", "verified"),
    [(0.0, 0.0, False), (0.3, 0.5, False), (0.3, 0.29, True), (1.0, 0.999, True)],
)
async def test_the_draw_decides(sample: float, draw: float, verified: bool) -> None:
    metrics = GatewayMetrics(CollectorRegistry())
    cache, _ = await _cache(metrics, draw, sample=sample)
    calls: list[int] = []
    hit = await _ask(cache, PARAPHRASE)
    assert hit.status == "semantic"
    assert cache.verify(hit, _backend(ANSWER, calls)) is verified
    await cache.settle()
    assert len(calls) == int(verified)
    await cache.close()


async def test_only_semantic_hits_are_verified() -> None:
    cache, _ = await _cache(GatewayMetrics(CollectorRegistry()), sample=1.0)
    calls: list[int] = []
    for text in (STORED, "something else entirely"):  # an exact hit, a miss
        assert cache.verify(await _ask(cache, text), _backend(ANSWER, calls)) is False
    assert calls == []
    await cache.close()


async def test_agreement_keeps_the_entry_as_it_was() -> None:
    metrics = GatewayMetrics(CollectorRegistry())
    cache, store = await _cache(metrics, sample=1.0)
    hit = await _ask(cache, PARAPHRASE)
    assert hit.entry is not None
    same = _answer("  use the reset link ")  # the cached text, differently spaced
    assert cache.verify(hit, _backend(same, []))
    await cache.settle()
    assert _count(metrics, "agree") == 1
    entry = await store.get(hit.entry.id)
    assert entry is not None
    assert entry.evidence == Evidence(agree=1)
    assert (await _ask(cache, PARAPHRASE)).status == "semantic"
    await cache.close()


async def test_disagreement_tightens_then_makes_the_entry_exact_only() -> None:
    metrics = GatewayMetrics(CollectorRegistry())
    cache, store = await _cache(metrics, sample=1.0, margin=0.01, max_disagreements=2)
    hit = await _ask(cache, PARAPHRASE)
    assert hit.entry is not None
    assert hit.similarity is not None
    other = _answer("You change my email instead.")  # far from "Use the reset link."
    assert cache.verify(hit, _backend(other, []))
    await cache.settle()
    assert _count(metrics, "disagree") == 1
    entry = await store.get(hit.entry.id)
    assert entry is not None
    assert entry.evidence.disagree == 1
    assert entry.evidence.min_cosine == pytest.approx(hit.similarity + 0.01)
    # The same question (and any as far from the entry) now misses; a closer one still hits.
    assert (await _ask(cache, PARAPHRASE)).status == "miss"
    assert metrics.cache_guard_refusals.labels("tightened")._value.get() == 1
    closer = await _ask(cache, CLOSER)
    assert closer.status == "semantic"
    assert metrics.cache_tightened.labels("raised")._value.get() == 1
    # A second disagreement: exact hits only.
    assert cache.verify(closer, _backend(other, []))
    await cache.settle()
    assert metrics.cache_tightened.labels("exact_only")._value.get() == 1
    assert (await _ask(cache, CLOSER)).status == "miss"
    assert metrics.cache_guard_refusals.labels("exact_only")._value.get() == 1
    assert (await _ask(cache, STORED)).status == "exact"
    await cache.close()


@pytest.mark.parametrize(
    ("raised", "outcome"),
    [
        (NoAnswer("skipped", "no free slot"), "skipped"),
        (NoAnswer("failed", "upstream 503"), "failed"),
    ],
)
async def test_no_answer_is_counted_and_changes_nothing(raised: NoAnswer, outcome: str) -> None:
    metrics = GatewayMetrics(CollectorRegistry())
    cache, store = await _cache(metrics, sample=1.0)
    hit = await _ask(cache, PARAPHRASE)
    assert hit.entry is not None

    async def ask() -> dict[str, Any]:
        raise raised

    assert cache.verify(hit, ask)
    await cache.settle()
    assert _count(metrics, outcome) == 1
    entry = await store.get(hit.entry.id)
    assert entry is not None
    assert entry.evidence == Evidence()
    await cache.close()


async def test_bounded_and_cancelled_on_close() -> None:
    metrics = GatewayMetrics(CollectorRegistry())
    cache, _ = await _cache(metrics, sample=1.0, max_inflight=1)
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def hanging() -> dict[str, Any]:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        raise AssertionError("never answered")

    hit = await _ask(cache, PARAPHRASE)
    assert cache.verify(hit, hanging)
    await started.wait()
    assert not cache.verify(hit, hanging)  # the one slot is taken: skipped, not queued
    assert _count(metrics, "skipped") == 1
    await cache.close()
    assert cancelled.is_set()
    assert not cache.verify(hit, hanging)  # closed: nothing starts
    assert not cache.verifications._tasks


@pytest.mark.parametrize(
    ("fresh", "outcome", "evidence"),
    [
        ("Use the reset link.", "agree", Evidence(agree=1)),  # identical: no embedding needed
        ("Take 10 steps.", "disagree", Evidence(disagree=1, min_cosine=0.91)),  # numbers
        ("Open the settings page.", "failed", Evidence()),  # undecided without embeddings
    ],
)
async def test_without_embeddings_only_certain_verdicts_count(
    fresh: str, outcome: str, evidence: Evidence
) -> None:
    """An embedder that cannot answer (closed, overloaded) is no evidence of disagreement."""
    metrics = GatewayMetrics(CollectorRegistry())
    store = MemoryStore(ttl_s=60, max_entries=10, clock=lambda: 0.0)

    async def no_embedding(text: str) -> None:
        return None

    hit = await _entry_in(store)
    checks = Verifications(CacheVerify(sample=1.0), store, no_embedding, metrics)
    assert checks.offer(hit, 0.9, _backend(_answer(fresh), []))
    await checks.settle()
    assert _count(metrics, outcome) == 1
    stored = await store.get(hit.id)
    assert stored is not None
    assert stored.evidence.agree == evidence.agree
    assert stored.evidence.disagree == evidence.disagree
    assert stored.evidence.min_cosine == pytest.approx(evidence.min_cosine)


async def _entry_in(store: MemoryStore) -> Entry:
    entry = Entry(5, "x", "s", STORED, None, _answer("Use the reset link."), 4)
    await store.put(entry)
    return entry
