"""Micro-batching of embedding requests across concurrent callers.

Algorithm: callers enqueue a text and await a future. One drain task takes whatever is
waiting (up to ``max_batch`` texts) and encodes it in a single worker thread; texts that
arrive while the model is busy form the next batch. No timer holds a lone request back: an
idle batcher encodes a single text at once, and under load the batch size grows by itself
with the arrival rate, so throughput rises (one forward pass for many texts) while the
wait stays bounded by one batch in progress. Parameters: ``max_batch`` (default 32) bounds
that wait; ``max_pending`` (default 1024) refuses work past it so memory cannot grow
without bound (the caller then treats the request as a cache miss).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from gateway.embedding.encoder import Encoder, Vectors


class BatcherClosed(RuntimeError):
    """The batcher was closed, or is too far behind to take more work."""


@dataclass(slots=True)
class _Job:
    text: str
    future: asyncio.Future[Vectors]


class MicroBatcher:
    """Embeds texts off the event loop, batching those that wait together."""

    def __init__(
        self,
        encoder: Encoder,
        *,
        max_batch: int = 32,
        max_pending: int = 1024,
        on_batch: Callable[[int, float], None] | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.encoder = encoder
        self._max_batch = max_batch
        self._max_pending = max_pending
        self._on_batch = on_batch
        self._clock = clock
        self._pending: list[_Job] = []
        self._drain: asyncio.Task[None] | None = None
        # One thread: torch already uses every core inside one forward pass.
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="embed")
        self._closed = False

    @property
    def dim(self) -> int:
        return self.encoder.dim

    async def embed(self, text: str) -> Vectors:
        """The unit vector of ``text`` (shape ``(dim,)``)."""
        if self._closed or len(self._pending) >= self._max_pending:
            raise BatcherClosed("the embedder is closed or overloaded")
        job = _Job(text, asyncio.get_running_loop().create_future())
        self._pending.append(job)
        if self._drain is None or self._drain.done():
            self._drain = asyncio.create_task(self._run(), name="embed-batcher")
        return await job.future

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while self._pending:
            batch = self._pending[: self._max_batch]
            del self._pending[: self._max_batch]
            texts = [job.text for job in batch]
            started = self._clock() if self._clock is not None else 0.0
            try:
                vectors = await loop.run_in_executor(self._pool, self.encoder.encode, texts)
            except Exception as exc:  # the model failed: every caller of the batch learns it
                for job in batch:
                    if not job.future.done():
                        job.future.set_exception(exc)
                continue
            if self._on_batch is not None and self._clock is not None:
                self._on_batch(len(batch), self._clock() - started)
            for job, vector in zip(batch, vectors, strict=True):
                if not job.future.done():  # the caller may have gone
                    job.future.set_result(np.asarray(vector, dtype=np.float32))

    async def close(self) -> None:
        self._closed = True
        if self._drain is not None:
            await asyncio.gather(self._drain, return_exceptions=True)
        self._pool.shutdown(wait=False, cancel_futures=True)
