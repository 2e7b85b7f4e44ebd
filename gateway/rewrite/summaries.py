"""Background summaries of dropped conversation runs, and their per-session cache.

``SummaryService.find`` never waits: it answers from the cache (a summary that passed the
fact check, or nothing) and, on a miss, starts one background task asking the configured
pool for a summary; when a shorter cut of the same conversation already has one (the cut
moved forward a step), the pool is asked to extend that summary with the turns that followed
instead of reading the whole dropped run again. The request that missed is sent with a
truncation marker; a later request dropping the same messages in the same session finds the
summary.

A finished summary is checked once, when it arrives (``check_summary``: every number, date,
identifier and multiword name of the dropped text must be in it); a failure is cached as such,
counted and never used, so such requests keep the truncation marker until the entry expires.

Bounds: one task per key at a time, at most ``max_pending`` tasks (more misses are skipped and
counted), inputs longer than the summary pool's ``max_input_tokens`` are never sent,
each call is bounded by ``timeout_s``. Parameters come from the pool's ``compression.summary``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from gateway.classify.tokens import TokenCounter
from gateway.errors import GatewayError
from gateway.metrics import GatewayMetrics
from gateway.openai.messages import Message
from gateway.rewrite.history_trim import Compression
from gateway.rewrite.summary_cache import (
    SummaryCache,
    extend_request,
    summary_key,
    summary_request,
    transcript,
)
from gateway.rewrite.summary_check import check_summary
from gateway.schema import Summary

log = logging.getLogger(__name__)

# (pool, chat request body) -> the answer's text; raises GatewayError on failure.
Complete = Callable[[str, dict[str, Any]], Awaitable[str]]


class SummaryService:
    def __init__(
        self,
        complete: Complete,
        metrics: GatewayMetrics,
        *,
        clock: Callable[[], float],
        cache: SummaryCache | None = None,
        max_pending: int = 16,
    ) -> None:
        self._cache = cache if cache is not None else SummaryCache(clock=clock)
        self._complete = complete
        self._metrics = metrics
        self._max_pending = max_pending
        self._pending: dict[str, asyncio.Task[None]] = {}

    def find(
        self, scope: str, compression: Compression, settings: Summary, counter: TokenCounter
    ) -> str | None:
        """A checked summary of what ``compression`` drops if one is cached; else maybe start
        writing one (extending the summary of an earlier, shorter cut when there is one)."""
        dropped = compression.dropped
        key = summary_key(scope, dropped)
        entry = self._cache.get(key)
        if entry is not None:
            return entry.text
        if key in self._pending:
            return None
        if len(self._pending) >= self._max_pending:
            self._count("skipped_busy")
            return None
        body, size = self._request(scope, compression, settings, counter)
        if size > settings.max_input_tokens:
            self._cache.put(key, None)  # remember, so the run is not counted again
            self._count("skipped_too_long")
            return None
        task = asyncio.create_task(self._write(key, dropped, settings, body))
        self._pending[key] = task
        # Also runs for a task cancelled before it started (its own code never runs then).
        task.add_done_callback(lambda done: self._finished(key, done))
        return None

    def earlier(self, scope: str, compression: Compression) -> tuple[int, str] | None:
        """The checked summary of the latest earlier cut of this conversation, if cached, and
        how many of the dropped messages it covers."""
        for cut in reversed(compression.earlier):
            covered = cut.dropped(compression.source)
            entry = self._cache.get(summary_key(scope, covered))
            if entry is not None and entry.text is not None:
                return len(covered), entry.text
        return None

    def _request(
        self, scope: str, compression: Compression, settings: Summary, counter: TokenCounter
    ) -> tuple[dict[str, Any], int]:
        """The summary request and its input size: extend the latest earlier summary, if any."""
        dropped = compression.dropped
        found = self.earlier(scope, compression)
        if found is not None:
            covered, text = found
            following = dropped[covered:]
            size = counter.count(text) + counter.count_messages(following)
            return extend_request(text, following, settings.max_tokens), size
        size = counter.count_messages(dropped)
        return summary_request(dropped, settings.max_tokens), size

    @property
    def pending(self) -> int:
        return len(self._pending)

    async def wait_idle(self) -> None:
        """Wait until no summary is being written (tests; shutdown)."""
        while self._pending:
            await asyncio.gather(*self._pending.values(), return_exceptions=True)
            await asyncio.sleep(0)  # done callbacks run on the next loop iteration

    async def close(self) -> None:
        tasks = list(self._pending.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _write(
        self,
        key: str,
        dropped: tuple[Message, ...],
        settings: Summary,
        body: dict[str, Any],
    ) -> None:
        assert settings.pool is not None  # the compile step guarantees it
        try:
            async with asyncio.timeout(settings.timeout_s):
                text = await self._complete(settings.pool, body)
        except TimeoutError:
            self._count("timeout")
            return
        except GatewayError as exc:
            # Not cached: the pool may answer next time; the request path is unaffected.
            log.info("summary from pool %s failed: %s", settings.pool, exc.message)
            self._count("error")
            return
        self._store(key, dropped, text.strip())

    def _finished(self, key: str, task: asyncio.Task[None]) -> None:
        self._pending.pop(key, None)
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:
            # A bug of ours: say so loudly, but requests only ever lose the summary.
            log.error("writing a summary failed", exc_info=error)
            self._count("error")

    def _store(self, key: str, dropped: tuple[Message, ...], text: str) -> None:
        check = check_summary(transcript(dropped), text)
        if text and check.ok:
            self._cache.put(key, text)
            self._count("stored")
            return
        self._cache.put(key, None, check.missing)
        self._metrics.compression_summary_check_failures.inc()
        self._count("check_failed")
        log.info("summary refused, it lost %s", ", ".join(check.missing[:10]) or "everything")

    def _count(self, result: str) -> None:
        self._metrics.compression_summaries.labels(result).inc()
