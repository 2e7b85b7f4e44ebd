from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

import numpy as np
import pytest

from gateway.embedding import BatcherClosed, MicroBatcher
from gateway.embedding.encoder import Vectors


class GatedEncoder:
    """Blocks each batch until the test lets it go, and records batch sizes."""

    dim = 3

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.gate = threading.Semaphore(0)
        self.started = threading.Event()

    def encode(self, texts: Sequence[str]) -> Vectors:
        self.batches.append(list(texts))
        self.started.set()
        assert self.gate.acquire(timeout=10)
        return np.array([[len(t), 0, 0] for t in texts], dtype=np.float32)


async def test_requests_arriving_while_busy_share_one_batch() -> None:
    encoder = GatedEncoder()
    batcher = MicroBatcher(encoder, max_batch=8)
    first = asyncio.create_task(batcher.embed("a"))
    await asyncio.to_thread(encoder.started.wait, 10)
    rest = [asyncio.create_task(batcher.embed("b" * i)) for i in range(1, 6)]
    await asyncio.sleep(0)  # let them enqueue
    encoder.gate.release()
    encoder.gate.release()
    vectors = await asyncio.gather(first, *rest)
    assert [len(b) for b in encoder.batches] == [1, 5]
    assert [float(v[0]) for v in vectors] == [1, 1, 2, 3, 4, 5]
    await batcher.close()


async def test_batches_are_capped() -> None:
    encoder = GatedEncoder()
    batcher = MicroBatcher(encoder, max_batch=2)
    tasks = [asyncio.create_task(batcher.embed(str(i))) for i in range(5)]
    for _ in range(3):
        encoder.gate.release()
    await asyncio.gather(*tasks)
    assert [len(b) for b in encoder.batches] == [2, 2, 1]
    await batcher.close()


async def test_a_failing_model_fails_its_callers_and_a_closed_batcher_refuses() -> None:
    class Broken:
        dim = 3

        def encode(self, texts: Sequence[str]) -> Vectors:
            raise RuntimeError("boom")

    batcher = MicroBatcher(Broken())
    with pytest.raises(RuntimeError):
        await batcher.embed("x")
    await batcher.close()
    with pytest.raises(BatcherClosed):
        await batcher.embed("x")
