"""Policy reloads and the cache: what is kept, what is rebuilt."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
from prometheus_client import CollectorRegistry

from gateway.cache.live_cache import CacheHolder
from gateway.embedding import EmbedderSettings, EmbedderSlot, MicroBatcher, Vectors
from gateway.metrics import GatewayMetrics
from gateway.schema import Cache, Knn


def test_reloads_keep_what_did_not_change() -> None:
    holder = CacheHolder(GatewayMetrics(CollectorRegistry()), clock=lambda: 0.0)
    holder.reconcile(Cache(enabled=True))
    first = holder.cache
    assert first is not None
    holder.reconcile(Cache(enabled=True))
    assert holder.cache is first
    holder.reconcile(Cache(enabled=True), Knn(enabled=True, weight=0.5))
    assert holder.cache is first  # the kNN settings alone: answers kept
    holder.reconcile(Cache(enabled=True, ttl_s=10))
    assert holder.cache is not first
    holder.reconcile(Cache(enabled=False))
    assert holder.cache is None
    assert not holder.loading()  # nothing started before the lifespan


def test_the_learned_difficulty_model_alone_needs_the_embedder() -> None:
    holder = CacheHolder(GatewayMetrics(CollectorRegistry()), clock=lambda: 0.0)
    holder.reconcile(Cache(enabled=False))
    assert holder._embedder is None
    holder.reconcile(Cache(enabled=False), for_routing=True)
    embedder = holder._embedder
    assert embedder is not None
    assert holder.cache is None  # the cache stays off; only routing embeds
    holder.reconcile(Cache(enabled=True), for_routing=True)
    assert holder._embedder is embedder  # same embedder settings: kept across the reload


class _Held:
    """An encoder that answers only once released (an embedder busy with other work)."""

    dim = 2

    def __init__(self) -> None:
        self.release = threading.Event()

    def encode(self, texts: Sequence[str]) -> Vectors:
        self.release.wait(timeout=30)
        return np.asarray([[1.0, 0.0]] * len(texts), dtype=np.float32)


async def test_embed_gives_up_after_its_timeout() -> None:
    holder = CacheHolder(GatewayMetrics(CollectorRegistry()), clock=lambda: 0.0)
    encoder = _Held()
    slot = EmbedderSlot(EmbedderSettings())
    slot.batcher = MicroBatcher(encoder)
    holder._embedder = slot
    assert await holder.embed("question", timeout_s=0.01) is None  # still held: gave up
    encoder.release.set()
    vector = await holder.embed("question", timeout_s=None)
    assert vector is not None
    assert vector.tolist() == [1.0, 0.0]
    await slot.batcher.close()
