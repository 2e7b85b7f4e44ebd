"""The local vector index of a cache, driven from the event loop, worked in one thread.

Every operation on the ``ScopedIndex`` (add, remove, search, rebuild) runs in a single
worker thread, in the order it was asked for: FAISS indexes are not safe under concurrent
writes, and a search over a large HNSW graph or a rebuild must not hold the event loop.
Writes are fire-and-forget (the store already has the entry; a lost write is a miss), reads
are awaited.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections.abc import Callable

import faiss

from gateway.cache.entry import Entry
from gateway.cache.index import IndexSettings, ScopedIndex
from gateway.embedding import Vectors

log = logging.getLogger(__name__)


class IndexWorker:
    """An ``IndexListener`` for the store and the searcher of the cache."""

    def __init__(self, settings: IndexSettings | None = None) -> None:
        self._settings = settings
        self._index: ScopedIndex | None = None  # made with the first vector's dimension
        # One query at a time gains nothing from OpenMP threads, whose spin-waits compete
        # with the event loop and the embedder for the cores (set in the worker: per thread).
        self._pool = concurrent.futures.ThreadPoolExecutor(
            1,
            thread_name_prefix="cache-index",
            initializer=faiss.omp_set_num_threads,
            initargs=(1,),
        )

    def __len__(self) -> int:
        return 0 if self._index is None else len(self._index)

    def added(self, entry: Entry) -> None:
        if entry.vector is not None:
            self._submit(self._add, entry)

    def removed(self, entry_id: int) -> None:
        self._submit(self._remove, entry_id)

    def reset(self, entries: list[Entry]) -> None:
        self._submit(self._reset, entries)

    async def search(self, scope: str, vector: Vectors, k: int) -> list[tuple[int, float]]:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, self._search, scope, vector, k)

    async def settle(self) -> None:
        """Wait until every write asked for so far is done (tests, start-up)."""
        await asyncio.get_running_loop().run_in_executor(self._pool, lambda: None)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _search(self, scope: str, vector: Vectors, k: int) -> list[tuple[int, float]]:
        if self._index is None or vector.shape != (self._index.dim,):
            return []
        return self._index.search(scope, vector, k)

    def _add(self, entry: Entry) -> None:
        assert entry.vector is not None
        if self._index is None:
            self._index = ScopedIndex(entry.vector.shape[0], self._settings)
        if entry.vector.shape == (self._index.dim,):
            self._index.add(entry.scope, entry.id, entry.vector)

    def _remove(self, entry_id: int) -> None:
        if self._index is not None:
            self._index.remove(entry_id)

    def _reset(self, entries: list[Entry]) -> None:
        if self._index is not None:
            self._index.clear()
        for entry in entries:
            if entry.vector is not None:
                self._add(entry)

    def _submit(self, fn: Callable[..., None], *args: object) -> None:
        try:
            future = self._pool.submit(fn, *args)
        except RuntimeError:  # closed: the cache is going away
            return
        future.add_done_callback(_log_failure)


def _log_failure(future: concurrent.futures.Future[None]) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.error("cache index update failed", exc_info=future.exception())
