"""The cache of a running gateway, rebuilt when a policy reload changes its settings.

The embedder is kept across reloads while its own settings stay the same (loading torch
and the model takes seconds). Before the lifespan starts nothing runs; after, a new cache
is started and the old one closed in background tasks, so a reload never waits on them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from gateway.cache.memory import MemoryStore
from gateway.cache.service import ResponseCache
from gateway.cache.store import CacheStore
from gateway.embedding import EmbedderSettings, EmbedderSlot, SlotState
from gateway.metrics import GatewayMetrics
from gateway.policy.schema import Cache as CacheSettings


class CacheHolder:
    def __init__(self, metrics: GatewayMetrics, clock: Callable[[], float]) -> None:
        self._metrics = metrics
        self._clock = clock
        self.cache: ResponseCache | None = None
        self._settings: CacheSettings | None = None
        self._embedder: EmbedderSlot | None = None
        self._running = False
        self._tasks: set[asyncio.Task[None]] = set()
        metrics.cache_entries.set_function(lambda: len(self.cache.index) if self.cache else 0)

    def reconcile(self, settings: CacheSettings) -> None:
        if settings == self._settings:
            return
        self._settings = settings
        old, old_embedder = self.cache, self._embedder
        self._embedder = self._embedder_for(settings)
        self.cache = None
        if settings.enabled:
            store = self._store(settings)
            self.cache = ResponseCache(settings, store, self._embedder, self._metrics)
        if self._running:
            self._start_parts()
            if old is not None:
                self._spawn(old.close())
            if old_embedder is not None and old_embedder is not self._embedder:
                self._spawn(old_embedder.close())

    async def start(self) -> None:
        self._running = True
        if self.cache is not None:
            await self.cache.start()
        if self._embedder is not None:
            self._embedder.start()

    def loading(self) -> bool:
        """The embedding model is still loading (``/readyz`` waits; a failed load does not)."""
        return self._embedder is not None and self._embedder.state is SlotState.LOADING

    async def ready(self) -> bool:
        """Wait until the embedder has loaded (or failed) and pending writes are done."""
        loaded = self._embedder is not None and await self._embedder.ready()
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

    def _start_parts(self) -> None:
        if self.cache is not None:
            self._spawn(self.cache.start())
        if self._embedder is not None:
            self._embedder.start()

    def _embedder_for(self, settings: CacheSettings) -> EmbedderSlot | None:
        semantic = settings.semantic
        if not (settings.enabled and semantic.enabled):
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
            from gateway.cache.redis_store import RedisStore

            return RedisStore(settings, metrics=self._metrics)
        return MemoryStore(
            ttl_s=settings.ttl_s, max_entries=settings.max_entries, clock=self._clock
        )

    def _spawn(self, coro: object) -> None:
        task: asyncio.Task[None] = asyncio.create_task(coro)  # type: ignore[arg-type]
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
