"""IndexWorker: a search sees the writes asked before it, and runs on the caller's thread
when no write is pending (no hand-off to the worker)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import numpy as np
import pytest

from gateway.cache.index.index_worker import IndexWorker
from gateway.cache.store.entry import Entry


def _entry(entry_id: int, vector: np.ndarray) -> Entry:
    return Entry(entry_id, f"x{entry_id}", "s", "q", vector, {}, 1)


def _unit(seed: int, n: int, dim: int = 8) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.fixture
def worker() -> Iterator[IndexWorker]:
    made = IndexWorker()
    yield made
    made.close()


async def test_a_search_sees_every_write_asked_before_it(worker: IndexWorker) -> None:
    vectors = _unit(0, 50)
    for i, v in enumerate(vectors):
        worker.added(_entry(i, v))
    worker.removed(3)  # no settle: the search must still come after these
    assert (await worker.search("s", vectors[7], 1))[0][0] == 7
    assert all(i != 3 for i, _ in await worker.search("s", vectors[3], 4))
    assert len(worker) == 49


async def test_with_no_write_pending_a_search_needs_no_worker_thread(worker: IndexWorker) -> None:
    vectors = _unit(1, 20)
    for i, v in enumerate(vectors):
        worker.added(_entry(i, v))
    await worker.settle()
    release = threading.Event()
    busy = asyncio.get_running_loop().run_in_executor(worker._pool, release.wait)
    try:
        async with asyncio.timeout(5):  # a hand-off would wait for ``release``
            found = await worker.search("s", vectors[4], 2)
        assert found[0][0] == 4
    finally:
        release.set()
        await busy


async def test_while_a_write_is_pending_a_search_waits_for_it(worker: IndexWorker) -> None:
    vectors = _unit(2, 2)
    worker.added(_entry(0, vectors[0]))
    await worker.settle()
    release = threading.Event()
    busy = asyncio.get_running_loop().run_in_executor(worker._pool, release.wait)
    worker.added(_entry(1, vectors[1]))  # queued behind ``busy``
    search = asyncio.ensure_future(worker.search("s", vectors[1], 1))
    await asyncio.sleep(0)
    assert not search.done()
    release.set()
    await busy
    assert (await search)[0][0] == 1
