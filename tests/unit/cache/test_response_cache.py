"""ResponseCache with a stand-in encoder: exact, semantic, guard, verifier, token limit, slow
embedder."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from prometheus_client import CollectorRegistry

from gateway.cache.judgement.verifier import Curve
from gateway.cache.response_cache import ResponseCache
from gateway.cache.store.memory_store import MemoryStore
from gateway.embedding import EmbedderSettings, EmbedderSlot
from gateway.embedding.encoder import Vectors
from gateway.metrics import GatewayMetrics
from gateway.schema import Cache, SemanticCache
from tests.unit.cache.judgement.test_verifier import toy_verifier

ANSWER = {
    "object": "chat.completion",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "Use the reset link."},
         "finish_reason": "stop"}
    ],
    "usage": {"prompt_tokens": 5, "completion_tokens": 20, "total_tokens": 25},
}  # fmt: skip


class WordEncoder:
    """Bag of words on a fixed vocabulary: similar wording, similar vector."""

    dim = 8
    vocab = ("reset", "password", "my", "how", "not", "change", "email", "do")

    def __init__(self) -> None:
        self.gate: threading.Event | None = None
        self.entered = threading.Event()  # set once a gated encode has begun

    def encode(self, texts: Sequence[str]) -> Vectors:
        if self.gate is not None:
            self.entered.set()
            self.gate.wait(10)
        out = []
        for text in texts:
            words = text.lower().replace("?", "").split()
            v = np.array([float(w in words) for w in self.vocab], dtype=np.float32) + 1e-3
            out.append(v / np.linalg.norm(v))
        return np.stack(out)


class StepClock:
    """A clock that moves only when told."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def _cache(
    encoder: WordEncoder, clock: StepClock | None = None, **semantic: Any
) -> ResponseCache:
    slot = EmbedderSlot(EmbedderSettings(), loader=lambda _: encoder)
    slot.start()
    assert await slot.ready()
    settings = Cache(enabled=True, semantic=SemanticCache(threshold=0.8, **semantic))
    store = MemoryStore(ttl_s=60, max_entries=100, clock=lambda: 0.0)
    metrics = GatewayMetrics(CollectorRegistry())
    cache = ResponseCache(settings, store, slot, metrics, clock=clock or StepClock())
    await cache.start()
    return cache


def _body(text: str, **extra: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}], "temperature": 0, **extra}


async def _store(cache: ResponseCache, text: str) -> None:
    lookup = await cache.lookup("chat", "fast", _body(text), {})
    capture = cache.capture(lookup, "chat")
    assert capture is not None
    capture.whole(ANSWER)
    await cache.settle()


async def test_exact_then_semantic_then_guard_then_token_limit() -> None:
    cache = await _cache(WordEncoder())
    await _store(cache, "How do I reset my password?")
    assert (
        await cache.lookup("chat", "fast", _body("How do I reset my password?"), {})
    ).status == "exact"
    found = await cache.lookup("chat", "fast", _body("how reset my password"), {})
    assert found.status == "semantic"
    assert found.entry is not None
    negated = await cache.lookup("chat", "fast", _body("How do I not reset my password?"), {})
    assert negated.status == "miss"
    short = await cache.lookup("chat", "fast", _body("how reset my password", max_tokens=10), {})
    assert short.status == "miss"  # the stored answer is 20 tokens long
    other_tenant = await cache.lookup(
        "chat", "fast", _body("How do I reset my password?"), {"authorization": "Bearer b"}
    )
    assert other_tenant.status == "miss"
    await cache.close()


async def test_a_slow_embedder_means_a_miss_not_a_wait() -> None:
    encoder = WordEncoder()
    cache = await _cache(encoder, embed_timeout_s=0.05)
    encoder.gate = threading.Event()
    found = await cache.lookup("chat", "fast", _body("How do I reset my password?"), {})
    assert (found.status, found.vector) == ("miss", None)
    encoder.gate.set()
    await cache.close()


async def test_a_lookup_says_how_long_it_waited_for_its_embedding() -> None:
    clock, encoder = StepClock(), WordEncoder()
    cache = await _cache(encoder, clock)
    await _store(cache, "How do I reset my password?")
    exact = await cache.lookup("chat", "fast", _body("How do I reset my password?"), {})
    assert (exact.status, exact.embed_s) == ("exact", None)  # found before any embedding
    encoder.gate = threading.Event()
    asked = asyncio.create_task(cache.lookup("chat", "fast", _body("how reset my password"), {}))
    assert await asyncio.to_thread(encoder.entered.wait, 10)
    clock.now += 0.125  # the embedding takes 125 ms on the cache's clock
    encoder.gate.set()
    found = await asked
    assert (found.status, found.embed_s) == ("semantic", 0.125)
    bypass = await cache.lookup("chat", "fast", _body("x", temperature=1), {})
    assert bypass.embed_s is None
    await cache.close()


async def test_bypass_and_refresh() -> None:
    cache = await _cache(WordEncoder())
    await _store(cache, "How do I reset my password?")
    body = _body("How do I reset my password?")
    bypass = await cache.lookup("chat", "fast", body, {"x-gateway-cache": "bypass"})
    assert bypass.status == "bypass"
    assert cache.capture(bypass, "chat") is None
    refresh = await cache.lookup("chat", "fast", body, {"x-gateway-cache": "refresh"})
    assert refresh.status == "miss"
    assert cache.capture(refresh, "chat") is not None
    await cache.close()


def _toy_verifier(path: Path, offset: float) -> str:
    """A verifier for the 8-d WordEncoder that serves cosines above ``offset``."""
    toy = toy_verifier(offset=offset, min_cosine=0.5)
    curve = Curve(np.array([0.5]), np.ones(1), np.ones(1))
    replace(toy, curve=curve, curve_no_guard=curve).save(path)
    return str(path)


async def _verified_cache(verifier_path: str, metrics: GatewayMetrics) -> ResponseCache:
    slot = EmbedderSlot(EmbedderSettings(), loader=lambda _: WordEncoder())
    slot.start()
    assert await slot.ready()
    settings = Cache(
        enabled=True, semantic=SemanticCache(verifier="features", verifier_path=verifier_path)
    )
    store = MemoryStore(ttl_s=60, max_entries=100, clock=lambda: 0.0)
    cache = ResponseCache(settings, store, slot, metrics)
    await cache.start()
    return cache


# The two questions' cosine is 0.89 (4 of 5 words shared).
@pytest.mark.parametrize(("offset", "status"), [(0.85, "semantic"), (0.95, "miss")])
async def test_the_verifier_decides_a_semantic_hit(
    tmp_path: Path, offset: float, status: str
) -> None:
    metrics = GatewayMetrics(CollectorRegistry())
    cache = await _verified_cache(_toy_verifier(tmp_path / "v.npz", offset), metrics)
    await _store(cache, "How do I reset my password?")
    found = await cache.lookup("chat", "fast", _body("how reset my password"), {})
    assert found.status == status
    refused = metrics.cache_guard_refusals.labels("verifier")._value.get()
    assert refused == (status == "miss")
    await cache.close()


async def test_unreadable_verifier_weights_leave_the_exact_cache(tmp_path: Path) -> None:
    metrics = GatewayMetrics(CollectorRegistry())
    cache = await _verified_cache(str(tmp_path / "missing.npz"), metrics)
    await _store(cache, "How do I reset my password?")
    assert (await cache.lookup("chat", "fast", _body("how reset my password"), {})).status == "miss"
    exact = await cache.lookup("chat", "fast", _body("How do I reset my password?"), {})
    assert exact.status == "exact"
    await cache.close()
