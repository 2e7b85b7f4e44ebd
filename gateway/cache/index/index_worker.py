"""The local vector index of a cache, driven from the event loop, written in one thread.

Algorithm: every write to the ``ScopedIndex`` (add, remove, reset and the rebuilds they
cause) runs in a single worker thread, in the order it was asked for, holding the index's
lock: FAISS indexes are not safe under concurrent writes, and a rebuild (seconds at 100k
entries) must not hold the event loop. Writes are fire-and-forget (the store already has
the entry; a lost write is a miss). A search runs on the caller's thread when every write
asked for so far is done (so a search still sees the writes asked before it) and the lock is
free at once: one query costs about 0.1 to 0.4 ms of CPU (a flat scope holds at most
``hnsw_from`` vectors, an HNSW search visits ``ef_search`` nodes), less than handing it to
the worker and back, two thread wake-ups that on busy cores each wait for a time slice.
Otherwise the search is queued behind the writes in the worker.
FAISS runs on one OpenMP thread in both threads: one query gains nothing from more, and
their spin-waits compete with the event loop and the embedder for the cores. FAISS (the
``semantic`` extra) is imported with the first vector: an exact-only cache never needs it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import sys
import threading
from collections.abc import Callable
from typing import TypeVar

from gateway.cache.index.faiss_index import IndexSettings, ScopedIndex
from gateway.cache.store.entry import Entry
from gateway.embedding import Vectors

log = logging.getLogger(__name__)

T = TypeVar("T")


class IndexWorker:
    """An ``IndexListener`` for the store and the searcher of the cache."""

    def __init__(self, settings: IndexSettings | None = None) -> None:
        self._settings = settings
        self._index: ScopedIndex | None = None  # made with the first vector's dimension
        self._lock = threading.Lock()  # held by every write, and by a search on the loop
        # Each has one writer (the loop, the worker), so neither loses a count.
        self._asked = self._written = 0
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="cache-index")

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
        if self._written == self._asked and self._lock.acquire(blocking=False):
            try:
                # OpenMP's thread count is per thread (0.1 us to set): the caller's here, the
                # worker's when it made the index.
                _one_thread()
                return self._search(scope, vector, k)
            finally:
                self._lock.release()
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, self._locked, self._search, scope, vector, k)

    async def settle(self) -> None:
        """Wait until every write asked for so far is done (tests, start-up)."""
        await asyncio.get_running_loop().run_in_executor(self._pool, lambda: None)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _locked(self, fn: Callable[..., T], *args: object) -> T:
        with self._lock:
            return fn(*args)

    def _write(self, fn: Callable[..., None], *args: object) -> None:
        try:
            self._locked(fn, *args)
        finally:
            self._written += 1

    def _search(self, scope: str, vector: Vectors, k: int) -> list[tuple[int, float]]:
        if self._index is None or vector.shape != (self._index.dim,):
            return []
        return self._index.search(scope, vector, k)

    def _add(self, entry: Entry) -> None:
        assert entry.vector is not None
        if self._index is None:
            import faiss  # the first vector: the semantic cache is on

            faiss.omp_set_num_threads(1)  # the worker's thread, for good
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
            self._asked += 1
            future = self._pool.submit(self._write, fn, *args)
        except RuntimeError:  # closed: the cache is going away
            self._asked -= 1
            return
        future.add_done_callback(_log_failure)


def _log_failure(future: concurrent.futures.Future[None]) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.error("cache index update failed", exc_info=future.exception())


def _one_thread() -> None:
    """One OpenMP thread for FAISS in the calling thread, once FAISS is in use."""
    faiss = sys.modules.get("faiss")
    if faiss is not None:
        faiss.omp_set_num_threads(1)
