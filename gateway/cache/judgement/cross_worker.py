"""The cross-encoder off the event loop: micro-batched in one thread, each wait bounded.

Algorithm: a lookup that needs a verification enqueues its (cached, asked) pair and waits
for its probability at most ``timeout_s``; past that, or when ``max_pending`` pairs already
wait, it gets no score (None) and the request goes on as a miss, to the backend. One drain
task hands whatever waits (up to ``max_batch`` pairs) to a single worker thread and scores
it in one forward pass; pairs that arrive meanwhile form the next batch, so an idle worker
scores a lone pair at once and a busy one batches. A pair whose caller stopped waiting is
still scored when its batch runs (a forward pass cannot be cut short) but nobody reads it;
pairs not yet handed to the thread are dropped when their caller has gone. The scorer is
any blocking ``(pairs) -> probabilities`` callable (``CrossEncoder.score`` in the gateway).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

log = logging.getLogger(__name__)

Scorer = Callable[[Sequence[tuple[str, str]]], list[float]]


class NoScore(Exception):
    """The pair was not scored: the worker closed, or the model failed."""


@dataclass(slots=True)
class _Job:
    pair: tuple[str, str]
    future: asyncio.Future[float]


class CrossWorker:
    def __init__(self, scorer: Scorer, *, max_batch: int = 8, max_pending: int = 32) -> None:
        self._scorer = scorer
        self._max_batch = max_batch
        self._max_pending = max_pending
        self._pending: list[_Job] = []
        self._drain: asyncio.Task[None] | None = None
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="cross-encoder")
        self._closed = False

    async def score(self, cached: str, asked: str, timeout_s: float) -> float | None:
        """The probability for the pair, or None: not within ``timeout_s``, or too busy."""
        if self._closed or len(self._pending) >= self._max_pending:
            return None
        job = _Job((cached, asked), asyncio.get_running_loop().create_future())
        self._pending.append(job)
        if self._drain is None or self._drain.done():
            self._drain = asyncio.create_task(self._run(), name="cross-encoder")
        try:
            async with asyncio.timeout(timeout_s):
                return await asyncio.shield(job.future)
        except TimeoutError:
            job.future.cancel()  # not scored when its batch comes, if not yet handed over
            return None
        except NoScore:
            return None

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while self._pending:
            batch = [job for job in self._pending[: self._max_batch] if not job.future.done()]
            del self._pending[: self._max_batch]
            if not batch:
                continue
            pairs = [job.pair for job in batch]
            try:
                scores = await loop.run_in_executor(self._pool, self._scorer, pairs)
            except (RuntimeError, ValueError) as exc:  # the model failed: a miss for each
                log.error("cross-encoder scoring failed: %s", exc)
                for job in batch:
                    if not job.future.done():
                        job.future.set_exception(NoScore(str(exc)))
                continue
            for job, value in zip(batch, scores, strict=True):
                if not job.future.done():
                    job.future.set_result(value)

    async def close(self) -> None:
        self._closed = True
        for job in self._pending:
            if not job.future.done():
                job.future.set_exception(NoScore("closed"))
        self._pending.clear()
        if self._drain is not None:
            await asyncio.gather(self._drain, return_exceptions=True)
        self._pool.shutdown(wait=False, cancel_futures=True)
