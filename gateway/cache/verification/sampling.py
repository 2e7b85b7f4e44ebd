"""Sampled verification of semantic hits, in the background, bounded.

Algorithm: each semantic hit is drawn with probability ``verify.sample`` (RNG injected).
A drawn hit, when fewer than ``verify.max_inflight`` verifications run, starts one task; the
client's answer (the cached one) goes out at once, unaffected. The task asks the backend the
same request (``Ask``, supplied by the request path: the request's own pool and admission,
non-streaming, skipped when the pool has no free slot); compares the two answers
(``answer_match.compare_answers``: identical text, equal numbers, then the cosine of their
embeddings from the cache's embedder against ``answer_min_cosine``); and records the verdict
in the entry's evidence where the entry lives (``store.update``, so every replica sees it):
a disagreement raises the entry's least cosine above the asked question's
(``evidence.py``), and after ``max_disagreements`` the entry serves exact hits only.
Outcomes are counted in ``gateway_cache_verifications_total{outcome}``: ``agree``,
``disagree``, ``skipped`` (no free verification or pool slot), ``failed`` (the backend's
answer did not come or had no text, or no embedding was to be had to compare them: no
evidence either way). Tasks are cancelled when the cache closes.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import numpy as np

from gateway.cache.store.entry import Entry
from gateway.cache.store.evidence import Evidence
from gateway.cache.store.protocol import CacheStore
from gateway.cache.verification.answer_match import answer_text, compare_answers, normalised
from gateway.embedding import Vectors
from gateway.metrics import GatewayMetrics
from gateway.schema import CacheVerify

log = logging.getLogger(__name__)

# The backend's whole answer to the hit's request; raises ``NoAnswer`` when there is none.
Ask = Callable[[], Awaitable[dict[str, Any]]]
# A text's unit embedding (None: the embedder cannot give one now).
Embed = Callable[[str], Awaitable[Vectors | None]]


class NoAnswer(Exception):
    """The backend was not asked (``skipped``: no free slot) or did not answer (``failed``)."""

    def __init__(self, outcome: Literal["skipped", "failed"], detail: str) -> None:
        super().__init__(detail)
        self.outcome = outcome


class Verifications:
    def __init__(
        self,
        settings: CacheVerify,
        store: CacheStore,
        embed: Embed,
        metrics: GatewayMetrics,
        *,
        draw: Callable[[], float] | None = None,
    ) -> None:
        self._settings = settings
        self._store = store
        self._embed = embed
        self._metrics = metrics
        self._draw = draw if draw is not None else random.Random().random
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False

    def offer(self, entry: Entry, cosine: float, ask: Ask) -> bool:
        """Draw this hit (served at ``cosine``) for verification and start it in the
        background when drawn and a slot is free; never waits. True: started."""
        sample = self._settings.sample
        if self._closed or sample <= 0.0 or self._draw() >= sample:
            return False
        if len(self._tasks) >= self._settings.max_inflight:
            self._metrics.cache_verifications.labels("skipped").inc()
            return False
        task = asyncio.create_task(self._verify(entry, cosine, ask), name="cache-verify")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return True

    async def settle(self) -> None:
        """Wait for the verifications under way (tests and benchmarks)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def close(self) -> None:
        self._closed = True
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _verify(self, entry: Entry, cosine: float, ask: Ask) -> None:
        counted = self._metrics.cache_verifications
        try:
            fresh = answer_text(await ask())
        except NoAnswer as exc:
            counted.labels(exc.outcome).inc()
            log.debug("cache: verification of entry %d %s: %s", entry.id, exc.outcome, exc)
            return
        except Exception:
            # A fault here must cost the verification, never the gateway.
            counted.labels("failed").inc()
            log.exception("cache: verification of entry %d failed", entry.id)
            return
        cached = answer_text(entry.answer)
        agreed = None if fresh is None or cached is None else await self._agree(cached, fresh)
        if agreed is None:
            counted.labels("failed").inc()  # no text, or no embedding: no evidence
            return
        counted.labels("agree" if agreed else "disagree").inc()
        settings = self._settings

        def change(evidence: Evidence) -> Evidence:
            return evidence.after(agreed=agreed, cosine=cosine, margin=settings.margin)

        updated = await self._store.update(entry.id, change)
        if not agreed and updated is not None:
            exact_only = updated.evidence.disagree == settings.max_disagreements
            self._metrics.cache_tightened.labels("exact_only" if exact_only else "raised").inc()
            log.info(
                "cache: entry %d disagreed with the backend at cosine %.3f: least cosine "
                "now %.3f%s",
                entry.id,
                cosine,
                updated.evidence.min_cosine or 0.0,
                ", exact hits only" if exact_only else "",
            )

    async def _agree(self, cached: str, fresh: str) -> bool | None:
        cosine = None
        if normalised(cached) != normalised(fresh):
            vectors = await asyncio.gather(self._embed(cached), self._embed(fresh))
            if vectors[0] is not None and vectors[1] is not None:
                cosine = float(np.dot(vectors[0], vectors[1]))
        return compare_answers(cached, fresh, cosine, self._settings.answer_min_cosine).agree
