"""The cache of a running gateway, rebuilt when a policy reload changes its settings.

The embedder is kept across reloads while its own settings stay the same (loading torch
and the model takes seconds); it serves the semantic cache, the learned difficulty model
(``classify.model``) and the classifier's kNN vote (``classify.knn``), whose exemplars are
embedded once the model is ready. Before the lifespan starts nothing runs; after, a new
cache is started and the old one closed in background tasks, so a reload never waits on
them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from gateway.cache.response_cache import ResponseCache
from gateway.cache.store.memory_store import MemoryStore
from gateway.cache.store.protocol import CacheStore
from gateway.classify.exemplars import load_knn
from gateway.classify.knn import KnnVote
from gateway.embedding import BatcherClosed, EmbedderSettings, EmbedderSlot, SlotState, Vectors
from gateway.metrics import GatewayMetrics
from gateway.schema import Cache as CacheSettings
from gateway.schema import Knn


class CacheHolder:
    def __init__(self, metrics: GatewayMetrics, clock: Callable[[], float]) -> None:
        self._metrics = metrics
        self._clock = clock
        self.cache: ResponseCache | None = None
        self.knn: KnnVote | None = None  # set once the exemplars are embedded
        self._settings: tuple[CacheSettings, Knn, bool] | None = None
        self._embedder: EmbedderSlot | None = None
        self._running = False
        self._tasks: set[asyncio.Task[None]] = set()
        metrics.cache_entries.set_function(lambda: len(self.cache.index) if self.cache else 0)

    def reconcile(
        self, settings: CacheSettings, knn: Knn | None = None, for_routing: bool = False
    ) -> None:
        """``for_routing``: the learned difficulty model needs embeddings too."""
        knn = knn if knn is not None else Knn()
        if (settings, knn, for_routing) == self._settings:
            return
        before = self._settings
        self._settings = (settings, knn, for_routing)
        old, old_embedder = self.cache, self._embedder
        self._embedder = self._embedder_for(settings, knn.enabled or for_routing)
        # A change to the kNN settings alone keeps the cached answers.
        keep = before is not None and before[0] == settings and self._embedder is old_embedder
        if not keep:
            self.cache = None
            if settings.enabled:
                store = self._store(settings)
                self.cache = ResponseCache(
                    settings, store, self._embedder, self._metrics, clock=self._clock
                )
        self.knn = None
        if self._running:
            self._start_parts(start_cache=not keep)
            if old is not None and not keep:
                self._spawn(old.close())
            if old_embedder is not None and old_embedder is not self._embedder:
                self._spawn(old_embedder.close())

    async def start(self) -> None:
        self._running = True
        if self.cache is not None:
            await self.cache.start()
        if self._embedder is not None:
            self._embedder.start()
        self._start_knn()

    async def embed(self, text: str, timeout_s: float | None = None) -> Vectors | None:
        """The text's embedding, or None while the model is not ready (or overloaded, or
        slower than ``timeout_s``)."""
        batcher = self._embedder.batcher if self._embedder is not None else None
        if batcher is None:
            return None
        try:
            async with asyncio.timeout(timeout_s):
                return await batcher.embed(text)
        except (BatcherClosed, TimeoutError):
            return None

    def loading(self) -> bool:
        """The embedding model is still loading (``/readyz`` waits; a failed load does not)."""
        return self._embedder is not None and self._embedder.state is SlotState.LOADING

    async def ready(self) -> bool:
        """Wait until the embedder has loaded (or failed) and pending writes are done."""
        loaded = self._embedder is not None and await self._embedder.ready()
        await asyncio.gather(*self._tasks, return_exceptions=True)  # e.g. the kNN exemplars
        if self.cache is not None:
            await self.cache.settle()
        return loaded

    async def close(self) -> None:
        self._running = False
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.cache is not None:
            await self.cache.close()
        if self._embedder is not None:
            await self._embedder.close()

    def _start_parts(self, *, start_cache: bool) -> None:
        if self.cache is not None and start_cache:
            self._spawn(self.cache.start())
        if self._embedder is not None:
            self._embedder.start()
        self._start_knn()

    def _start_knn(self) -> None:
        assert self._settings is not None
        knn, embedder = self._settings[1], self._embedder
        if knn.enabled and embedder is not None:
            self._spawn(self._build_knn(knn, embedder))

    async def _build_knn(self, knn: Knn, embedder: EmbedderSlot) -> None:
        if not await embedder.ready() or embedder.batcher is None:
            return
        vote = await load_knn(knn, embedder.batcher)
        if self._embedder is embedder and self._settings is not None and self._settings[1] == knn:
            self.knn = vote  # unless a reload replaced the settings meanwhile

    def _embedder_for(self, settings: CacheSettings, classify: bool) -> EmbedderSlot | None:
        """``classify``: the classifier needs embeddings (kNN vote or learned model)."""
        semantic = settings.semantic
        if not (settings.enabled and semantic.enabled) and not classify:
            return None
        wanted = EmbedderSettings(semantic.model_path, semantic.max_batch, semantic.threads)
        if self._embedder is not None and self._embedder.settings == wanted:
            return self._embedder
        metrics = self._metrics

        def on_batch(size: int, seconds: float) -> None:
            metrics.embedding_batch_size.observe(size)
            metrics.embedding_batch_seconds.observe(seconds)

        return EmbedderSlot(wanted, on_batch=on_batch, clock=time.perf_counter)

    def _store(self, settings: CacheSettings) -> CacheStore:
        if settings.store == "redis":
            from gateway.cache.store.redis_store import RedisStore

            return RedisStore(settings, metrics=self._metrics)
        return MemoryStore(
            ttl_s=settings.ttl_s, max_entries=settings.max_entries, clock=self._clock
        )

    def _spawn(self, coro: object) -> None:
        task: asyncio.Task[None] = asyncio.create_task(coro)  # type: ignore[arg-type]
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
