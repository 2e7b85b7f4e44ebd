"""The response cache of a running gateway: exact cache first, then the semantic cache.

Lookup, for a request the eligibility rules accept:
1. exact: the store's entry for the hash of the canonical request (``store/cache_keys.py``);
2. semantic (when the embedder is loaded and the question is short enough): embed the
   question (micro-batched, off the loop), take the ``candidates`` nearest cached questions
   of the same scope, and serve the best one the hit rule (``judgement/verdict.py``: the verifier at
   ``max_false_hit_rate``, or cosine and guard for a policy that sets ``threshold``) accepts
   and whose answer fits the request's token limit, unless the entry's own evidence
   refuses it (``evidence.py``: a threshold raised by sampled verification, or exact-only).
   With the cross-encoder (``cross_rule.py``) that first candidate is then read by it, off
   the loop with a bounded wait, and is the only one tried. The verifier's weights are
   read in the background from start (``rule_loading.py``); until then (or if they cannot
   be read) the semantic cache only misses.
The embedding computed here is kept with the miss and stored with the answer, so a request
is embedded once. ``x-gateway-cache: bypass`` skips the cache both ways; ``refresh`` skips
the lookup but stores the new answer over the old one. ``verify`` offers a semantic hit to
sampled verification (``verification/sampling.py``), which runs in the background.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from gateway.cache.index.index_worker import IndexWorker
from gateway.cache.judgement.rule_loading import SemanticRules, load_rules
from gateway.cache.judgement.verdict import Question, hit_rule
from gateway.cache.store.cache_keys import RequestKeys, request_keys
from gateway.cache.store.capture import AnswerCapture
from gateway.cache.store.eligibility import cacheable_request
from gateway.cache.store.entry import Entry
from gateway.cache.store.protocol import CacheStore
from gateway.cache.store.replay import estimate_completion
from gateway.cache.verification.sampling import Ask, Verifications
from gateway.embedding import BatcherClosed, EmbedderSlot, Vectors
from gateway.metrics import GatewayMetrics
from gateway.schema import Cache as CacheSettings
from gateway.schema import SemanticCache

log = logging.getLogger(__name__)

Status = Literal["miss", "exact", "semantic", "bypass"]


@dataclass(frozen=True, slots=True)
class Lookup:
    status: Status
    entry: Entry | None = None
    keys: RequestKeys | None = None
    vector: Vectors | None = None
    similarity: float | None = None
    store: bool = False  # whether the answer to this request should be stored
    embed_s: float | None = None  # seconds spent waiting for the embedding (None: not asked)


BYPASS = Lookup("bypass")


class ResponseCache:
    def __init__(
        self,
        settings: CacheSettings,
        store: CacheStore,
        embedder: EmbedderSlot | None,
        metrics: GatewayMetrics,
        *,
        new_id: Callable[[], int] = lambda: secrets.randbits(62),
        clock: Callable[[], float] = time.monotonic,
        draw: Callable[[], float] | None = None,
        rules: Callable[[SemanticCache], Awaitable[SemanticRules | None]] = load_rules,
    ) -> None:
        """``draw``: uniform numbers in [0, 1) that sample hits for verification; ``rules``
        loads the hit rules at start."""
        self.settings = settings
        self.store = store
        self.embedder = embedder
        self.index = IndexWorker()
        self._metrics = metrics
        self._new_id = new_id
        self._clock = clock
        self._tasks: set[asyncio.Task[None]] = set()
        semantic = settings.semantic
        self._load_rules = rules
        self._rules: SemanticRules | None = (
            None if semantic.uses_verifier else SemanticRules(hit_rule(semantic, None))
        )
        self.verifications = Verifications(
            semantic.verify, store, self._embed_text, metrics, draw=draw
        )

    async def start(self) -> None:
        semantic = self.settings.semantic
        if semantic.enabled and semantic.uses_verifier:
            # In the background: importing torch for the cross-encoder takes seconds, and
            # the gateway serves meanwhile (semantic lookups miss until the rules are in).
            self._spawn(self._load(semantic), name="cache-rules")
        await self.store.start(self.index)

    async def _load(self, semantic: SemanticCache) -> None:
        if self.embedder is not None:
            # After the embedding model: both import transformers, whose lazy imports are
            # not safe from two threads at once.
            await self.embedder.ready()
        self._rules = await self._load_rules(semantic)

    async def close(self) -> None:
        await self.verifications.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._rules is not None:  # after the loading task: it can set them no more
            await self._rules.close()
        await self.store.close()
        self.index.close()

    async def lookup(
        self, endpoint: str, model: str, body: Mapping[str, Any], headers: Mapping[str, str]
    ) -> Lookup:
        asked = headers.get("x-gateway-cache", "").lower()
        if asked == "bypass":
            return BYPASS
        if cacheable_request(body, any_temperature=self.settings.any_temperature) is not None:
            return BYPASS
        keys = request_keys(endpoint, model, body, headers.get("authorization"))
        if asked == "refresh":
            vector, embed_s = await self._embed(keys)
            return Lookup("miss", keys=keys, vector=vector, store=True, embed_s=embed_s)
        entry = await self.store.get_exact(keys.exact)
        if entry is not None and entry.fits(keys.max_tokens):
            return Lookup("exact", entry=entry, keys=keys, similarity=1.0)
        vector, embed_s = await self._embed(keys)
        return replace(await self._after_exact(keys, vector), embed_s=embed_s)

    async def lookup_with(
        self,
        endpoint: str,
        model: str,
        body: Mapping[str, Any],
        headers: Mapping[str, str],
        vector: Vectors,
    ) -> Lookup:
        """``lookup`` with the question's embedding already known (benchmarks, reuse)."""
        keys = request_keys(endpoint, model, body, headers.get("authorization"))
        entry = await self.store.get_exact(keys.exact)
        if entry is not None and entry.fits(keys.max_tokens):
            return Lookup("exact", entry=entry, keys=keys, similarity=1.0)
        return await self._after_exact(keys, vector)

    async def _after_exact(self, keys: RequestKeys, vector: Vectors | None) -> Lookup:
        if vector is not None and keys.query is not None:
            found = await self._semantic(keys, vector)
            if found is not None:
                return found
        return Lookup("miss", keys=keys, vector=vector, store=True)

    def verify(self, lookup: Lookup, ask: Ask) -> bool:
        """Offer a semantic hit to sampled verification (``ask`` puts its request to the
        backend); never waits. True: a verification started."""
        if lookup.status != "semantic" or lookup.entry is None or lookup.similarity is None:
            return False
        return self.verifications.offer(lookup.entry, lookup.similarity, ask)

    def capture(self, lookup: Lookup, endpoint: str) -> AnswerCapture | None:
        """A capture that stores the answer when the exchange ends well (None: store nothing)."""
        if not lookup.store or lookup.keys is None:
            return None
        keys, vector = lookup.keys, lookup.vector

        def on_answer(answer: dict[str, Any]) -> None:
            self._spawn(self._put(keys, vector, answer))

        return AnswerCapture(endpoint, on_answer)

    async def _embed(self, keys: RequestKeys) -> tuple[Vectors | None, float | None]:
        """The question's embedding (None: none to be had in time) and the seconds spent
        waiting for it (None: not asked for)."""
        semantic = self.settings.semantic
        batcher = self.embedder.batcher if self.embedder is not None else None
        if not semantic.enabled or batcher is None or keys.query is None:
            return None, None
        if not keys.query.strip() or len(keys.query) > semantic.max_query_chars:
            return None, None
        started = self._clock()
        try:
            # A backed-up embedder must not hold requests: past the wait, a plain miss.
            async with asyncio.timeout(semantic.embed_timeout_s):
                vector: Vectors | None = await batcher.embed(keys.query)
        except (BatcherClosed, TimeoutError):
            vector = None
        return vector, self._clock() - started

    async def _embed_text(self, text: str) -> Vectors | None:
        """An answer's embedding, for verification (None: the embedder is not there)."""
        batcher = self.embedder.batcher if self.embedder is not None else None
        if batcher is None:
            return None
        try:
            return await batcher.embed(text)
        except BatcherClosed:
            return None

    async def _semantic(self, keys: RequestKeys, vector: Vectors) -> Lookup | None:
        rules = self._rules
        if rules is None:
            return None
        rule = rules.rule
        assert keys.query is not None
        asked = Question(keys.query, vector)
        max_disagreements = self.settings.semantic.verify.max_disagreements
        found = await self.index.search(keys.scope, vector, self.settings.semantic.candidates)
        for entry_id, score in found:
            if score < rule.floor:
                break  # best first: the rest are further away
            entry = await self.store.get(entry_id)
            if entry is None:
                self.index.removed(entry_id)  # expired or evicted elsewhere
                continue
            if entry.scope != keys.scope or entry.query is None or entry.vector is None:
                continue
            reason = entry.evidence.refusal(score, max_disagreements) or rule.refusal(
                asked, entry.query, entry.vector, score
            )
            if reason is not None:
                self._metrics.cache_guard_refusals.labels(reason).inc()
                continue
            if not entry.fits(keys.max_tokens):
                continue
            if rules.check is not None:  # the cross-encoder reads the best candidate only
                reason = await rules.check.refusal(entry.query, keys.query)
                if reason is not None:
                    self._metrics.cache_guard_refusals.labels(reason).inc()
                    return None
            return Lookup("semantic", entry=entry, keys=keys, vector=vector, similarity=score)
        return None

    async def _put(self, keys: RequestKeys, vector: Vectors | None, answer: dict[str, Any]) -> None:
        usage = answer.get("usage")
        tokens = usage.get("completion_tokens") if isinstance(usage, dict) else None
        entry = Entry(
            id=self._new_id(),
            exact=keys.exact,
            scope=keys.scope,
            query=keys.query,
            vector=vector,
            answer={k: v for k, v in answer.items() if k not in ("id", "created")},
            completion_tokens=tokens if isinstance(tokens, int) else estimate_completion(answer),
        )
        await self.store.put(entry)
        log.debug("cache: put entry %d", entry.id)

    def _spawn(self, coro: Any, name: str = "cache-put") -> None:
        task: asyncio.Task[None] = asyncio.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def settle(self) -> None:
        """Wait for pending writes and verifications (tests and benchmarks)."""
        await self.verifications.settle()
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
        await self.index.settle()
