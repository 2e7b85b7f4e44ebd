"""Benchmark: the semantic cache's lookup latency and the embedding latency under load.

Lookup (embedding excluded): a ``ResponseCache`` on the memory store filled with ``n``
entries in one scope (the worst case: every entry in the searched index; the index turns
HNSW past 4,096 entries), vectors of random unit length 384-d (MiniLM's dimension: the
hardest case for HNSW, no structure to follow) or, with ``--vectors FILE``, real all-
MiniLM-L6-v2 embeddings of questions (the ``.npz`` the cache-quality commands keep in
``.cache/cache-quality/``: its first ``n`` texts stored, the next ones asked; nothing is
fitted or chosen on them); then ``--lookups`` lookups (random vectors: half near a stored
vector, hits, and half random, misses), each given its vector by a stand-in embedder so only
the cache itself is timed: exact-key hash and store read, the FAISS search, the store read
of candidates and the hit rule: the default (guard, then the cross-encoder on the best
candidate above its floor, off the loop with a bounded wait: its time includes one cross-
encoder verification whenever a candidate passes the guard), the feature verifier, and the
old one (cosine >= 0.92 and guard), interleaved lookup by lookup. Stored questions and asked
ones are drawn from eight FAQ questions, so the verifiers read real text. Sizes: ``--sizes``
(default 10,000 and 100,000). Printed: wall and CPU time (of the calling thread) per lookup,
the FAISS search alone, the load average, and the answer quality of the approximate index:
the share of lookups whose nearest neighbour is the exact one (a flat search over the same
vectors), over the lookups near a stored vector and, for real vectors, over those whose
exact nearest neighbour has a cosine of at least 0.6 (the verifier's floor).

Feature verifier: its decision for one candidate (both questions' text views
made afresh each time, as for a lookup's first candidate), on every ordered pair
of the FAQ questions with a vector at cosine 0.95, ``--lookups`` times; p50/p99 of the wall
time and of the thread's CPU time (on shared cores the wall time's tail is other processes'
time slices, the CPU time is the verifier's own).

Embedding: the real all-MiniLM-L6-v2 behind the ``MicroBatcher``; ``c`` concurrent callers
each embed one short question after another for ``--seconds``; p50/p99 of each call's wall
time (queueing included), texts per second, and the mean batch size. Levels: ``--levels``.

Figures are printed, nothing is asserted: ``python -m loadtests.cache_cost``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import faiss
import numpy as np
import numpy.typing as npt

from gateway.cache.judgement.rule_loading import SemanticRules
from gateway.cache.judgement.verdict import Question, hit_rule, views_table
from gateway.cache.judgement.verifier import load_verifier
from gateway.cache.response_cache import ResponseCache
from gateway.cache.store.cache_keys import request_keys
from gateway.cache.store.entry import Entry
from gateway.cache.store.memory_store import MemoryStore
from gateway.embedding import EmbedderSettings, EmbedderSlot, MicroBatcher, SentenceEncoder
from gateway.embedding.encoder import Vectors
from gateway.metrics import GatewayMetrics
from gateway.schema import Cache, SemanticCache
from loadtests.loadgen.stats import percentile

DIM = 384
QUESTIONS = [
    "How do I reset my password?",
    "What is your return policy for shoes?",
    "How can I track the order I placed yesterday?",
    "Why is my wifi connection so slow in the evening?",
    "What documents do I need to travel to Canada?",
    "How do I make fluffy pancakes without eggs?",
    "What is the difference between a Roth IRA and a traditional IRA?",
    "How do I connect the thermostat to wifi?",
]


class _FixedEmbedder:
    """Stands in for the model: returns the vector the benchmark chose for the next call."""

    dim = DIM

    def __init__(self) -> None:
        self.next: Vectors = np.zeros(DIM, np.float32)

    def encode(self, texts: Any) -> Vectors:
        return np.stack([self.next] * len(texts))


def _unit(rng: np.random.Generator, n: int) -> Vectors:
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    out: Vectors = v / np.linalg.norm(v, axis=1, keepdims=True)
    return out


async def _filled(n: int, vectors: Vectors) -> tuple[ResponseCache, Any, str]:
    settings = Cache(enabled=True, max_entries=n + 1)
    store = MemoryStore(ttl_s=3600, max_entries=n + 1, clock=time.monotonic)
    fake = _FixedEmbedder()
    slot = EmbedderSlot(EmbedderSettings(), loader=lambda _: fake)
    slot.start()
    await slot.ready()
    cache = ResponseCache(settings, store, slot, GatewayMetrics(_registry()))
    await cache.start()
    body = {"messages": [{"role": "user", "content": "q"}], "temperature": 0}
    scope = request_keys("chat", "fast", body, None).scope
    answer = {"object": "chat.completion", "choices": []}
    for i in range(n):
        question = QUESTIONS[i % len(QUESTIONS)]
        await store.put(Entry(i, f"x{i}", scope, question, vectors[i], answer, 10))
    await cache.index.settle()
    return cache, fake, scope


def _registry() -> Any:
    from prometheus_client import CollectorRegistry

    return CollectorRegistry()


def _queries(
    n: int, lookups: int, rng: np.random.Generator, real: Vectors | None
) -> tuple[Vectors, Vectors, npt.NDArray[np.bool_]]:
    """The stored vectors, the asked ones, and which asked ones count for recall."""
    if real is not None:
        if len(real) < n + lookups:
            raise SystemExit(f"--vectors holds {len(real)} vectors, fewer than {n + lookups}")
        return real[:n], real[n : n + lookups], np.ones(lookups, bool)
    stored = _unit(rng, n)
    near = np.arange(lookups) % 2 == 1
    asked = _unit(rng, lookups)
    base = stored[rng.integers(n, size=lookups)] + 0.02 * _unit(rng, lookups)
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    asked[near] = base[near]
    return stored, asked, near


def _recall(
    stored: Vectors, asked: Vectors, found: list[int], counted: npt.NDArray[np.bool_]
) -> str:
    """The share of ``counted`` lookups whose nearest neighbour is the exact one."""
    exact = faiss.IndexFlatIP(DIM)
    exact.add(stored)
    scores, ids = exact.search(asked, 1)
    right = ids[:, 0] == np.array(found)
    parts = [f"{right[counted].mean():.4f} of {int(counted.sum())} lookups"]
    relevant = counted & (scores[:, 0] >= 0.6)
    if relevant.any() and (relevant != counted).any():
        parts.append(f"{right[relevant].mean():.4f} of the {int(relevant.sum())} at cosine >= 0.6")
    return ", ".join(parts)


async def bench_lookup(n: int, lookups: int, real: Vectors | None) -> None:
    rng = np.random.default_rng(n)
    stored, asked, counted = _queries(n, lookups, rng, real)
    started = time.perf_counter()
    cache, fake, scope = await _filled(n, stored)
    build_s = time.perf_counter() - started
    index = cache.index._index
    assert index is not None
    search: list[float] = []
    nearest: list[int] = []
    for query in asked:
        t = time.perf_counter()
        found = index.search(scope, query, 4)
        search.append((time.perf_counter() - t) * 1000)
        nearest.append(found[0][0] if found else -1)
    # The same lookups under the default rule (guard, cross-encoder on the best candidate),
    # the feature verifier and the old one (cosine and guard), interleaved so all see the
    # same load; the later ones find the search's memory warm in the CPU's caches.
    features = hit_rule(SemanticCache(verifier="features"), load_verifier())
    rules = {
        "default (cross-encoder)": cache._rules,
        "feature verifier": SemanticRules(features),
        "old rule": SemanticRules(hit_rule(SemanticCache(threshold=0.92), None)),
    }
    times: dict[str, list[float]] = {name: [] for name in rules}
    cpu: dict[str, list[float]] = {name: [] for name in rules}
    hits = dict.fromkeys(rules, 0)
    for query in asked:
        fake.next = query
        question = QUESTIONS[int(rng.integers(len(QUESTIONS)))]
        body = {"messages": [{"role": "user", "content": question}], "temperature": 0}
        for name, rule in rules.items():
            cache._rules = rule
            t, c = time.perf_counter(), time.thread_time()
            result = await cache.lookup_with("chat", "fast", body, {}, fake.next)
            times[name].append((time.perf_counter() - t) * 1000)
            cpu[name].append((time.thread_time() - c) * 1000)
            hits[name] += result.status == "semantic"
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    for name, ms in times.items():
        print(
            f"lookup n={n:>7}, {name}: p50 {percentile(ms, 50):.3f} ms  "
            f"p99 {percentile(ms, 99):.3f} ms  max {max(ms):.3f} ms; CPU p50 "
            f"{percentile(cpu[name], 50):.3f} ms  p99 {percentile(cpu[name], 99):.3f} ms  "
            f"semantic hits {hits[name]}/{lookups}  (filled in {build_s:.1f} s)"
        )
    print(
        f"  FAISS search alone: p50 {percentile(search, 50):.3f} ms  "
        f"p99 {percentile(search, 99):.3f} ms; nearest neighbour as exact search: "
        f"{_recall(stored, asked, nearest, counted)}; load average {load}"
    )
    cache._rules = rules["default (cross-encoder)"]
    await cache.close()


def bench_verifier(lookups: int) -> None:
    rule = hit_rule(SemanticCache(verifier="features"), load_verifier())
    rng = np.random.default_rng(0)
    pairs = [(a, b) for a in QUESTIONS for b in QUESTIONS]
    times: list[float] = []
    cpu: list[float] = []
    served = 0
    for i in range(lookups):
        cached, asked = pairs[i % len(pairs)]
        va = _unit(rng, 1)[0]
        noise = _unit(rng, 1)[0]
        noise -= float(noise @ va) * va
        vb = (0.95 * va + np.sqrt(1 - 0.95**2) * noise / np.linalg.norm(noise)).astype(np.float32)
        rule = replace(rule, views=views_table())  # the cached question's view is not kept either
        t, c = time.perf_counter(), time.thread_time()
        reason = rule.refusal(Question(asked, vb), cached, va, float(vb @ va))
        times.append((time.perf_counter() - t) * 1000)
        cpu.append((time.thread_time() - c) * 1000)
        served += reason is None
    print(
        f"verifier per candidate: wall p50 {percentile(times, 50):.3f} ms  "
        f"p99 {percentile(times, 99):.3f} ms  max {max(times):.3f} ms; "
        f"CPU p50 {percentile(cpu, 50):.3f} ms  p99 {percentile(cpu, 99):.3f} ms  "
        f"({served}/{lookups} served)"
    )


async def bench_embedding(level: int, seconds: float, batcher: MicroBatcher) -> None:
    times: list[float] = []
    sizes: list[int] = []
    deadline = time.perf_counter() + seconds

    async def caller(k: int) -> None:
        i = k
        while time.perf_counter() < deadline:
            t = time.perf_counter()
            await batcher.embed(f"{QUESTIONS[i % len(QUESTIONS)]} ({i})")
            times.append(time.perf_counter() - t)
            i += level

    batcher._on_batch = lambda size, _s: sizes.append(size)
    batcher._clock = time.perf_counter
    started = time.perf_counter()
    await asyncio.gather(*(caller(k) for k in range(level)))
    elapsed = time.perf_counter() - started
    ms = [t * 1000 for t in times]
    print(
        f"embed c={level:>3}: p50 {percentile(ms, 50):6.2f} ms  p99 {percentile(ms, 99):6.2f} ms"
        f"  {len(times) / elapsed:7.1f} texts/s  ({1000 * elapsed / len(times):.2f} ms of model"
        f" per text)  mean batch {sum(sizes) / max(1, len(sizes)):.1f}"
    )


async def main_async(args: argparse.Namespace) -> None:
    bench_verifier(args.lookups)
    real = _real_vectors(args.vectors) if args.vectors is not None else None
    for n in args.sizes:
        await bench_lookup(n, args.lookups, real)
    if args.seconds > 0:
        started = time.perf_counter()
        encoder = SentenceEncoder(threads=args.threads)
        print(f"model loaded in {time.perf_counter() - started:.2f} s (torch import included)")
        batcher = MicroBatcher(encoder, max_batch=32)
        await batcher.embed("warm up")
        for level in args.levels:
            await bench_embedding(level, args.seconds, batcher)
        await batcher.close()


def _real_vectors(path: Path) -> Vectors:
    with np.load(path, allow_pickle=False) as data:
        out: Vectors = np.ascontiguousarray(data["vectors"], dtype=np.float32)
    return out


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    faiss.omp_set_num_threads(1)  # as in the cache's index thread
    parser = argparse.ArgumentParser(
        prog="python -m loadtests.cache_cost", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000])
    parser.add_argument("--lookups", type=int, default=2000)
    parser.add_argument("--vectors", type=Path, default=None, help="real embeddings (.npz)")
    parser.add_argument("--levels", type=int, nargs="*", default=[1, 4, 16, 64])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    asyncio.run(main_async(parser.parse_args()))
