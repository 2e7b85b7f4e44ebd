"""Benchmark: the semantic cache's lookup latency and the embedding latency under load.

Lookup (embedding excluded): a ``ResponseCache`` on the memory store filled with ``n``
entries in one scope (the worst case: every entry in the searched index; the index turns
HNSW past 4,096 entries), vectors of random unit length 384-d (MiniLM's dimension); then
``--lookups`` lookups, half near a stored vector (hits) and half random (misses), each
given its vector by a stand-in embedder so only the cache itself is timed: exact-key hash
and store read, the FAISS search in the index thread, the store read of candidates and the
hit rule: the default (guard and verifier) and the old one (cosine >= 0.92 and guard),
interleaved lookup by lookup. Stored questions and asked ones are drawn from eight FAQ
questions, so the verifier reads real text. Sizes: ``--sizes`` (default 10,000
and 100,000).

Verifier: the default hit rule's decision for one candidate (the asked question's text
features made afresh each time, as for a lookup's first candidate), on every ordered pair
of the FAQ questions with a vector at cosine 0.95, ``--lookups`` times; p50/p99 of the wall
time and of the thread's CPU time (on shared cores the wall time's tail is other processes'
time slices, the CPU time is the verifier's own).

Embedding: the real all-MiniLM-L6-v2 behind the ``MicroBatcher``; ``c`` concurrent callers
each embed one short question after another for ``--seconds``; p50/p99 of each call's wall
time (queueing included), texts per second, and the mean batch size. Levels: ``--levels``.

Figures are printed, nothing is asserted: ``python -m loadtests.bench_cache``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from typing import Any

import faiss
import numpy as np

from gateway.cache.decision import Question, hit_rule
from gateway.cache.entry import Entry
from gateway.cache.keys import request_keys
from gateway.cache.memory import MemoryStore
from gateway.cache.service import ResponseCache
from gateway.cache.verifier import load_verifier
from gateway.embedding import EmbedderSettings, EmbedderSlot, MicroBatcher, SentenceEncoder
from gateway.embedding.encoder import Vectors
from gateway.metrics import GatewayMetrics
from gateway.policy.schema import Cache, SemanticCache
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


async def _filled(n: int, rng: np.random.Generator) -> tuple[ResponseCache, Vectors, Any, str]:
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
    vectors = _unit(rng, n)
    answer = {"object": "chat.completion", "choices": []}
    for i in range(n):
        question = QUESTIONS[i % len(QUESTIONS)]
        await store.put(Entry(i, f"x{i}", scope, question, vectors[i], answer, 10))
    await cache.index.settle()
    return cache, vectors, fake, scope


def _registry() -> Any:
    from prometheus_client import CollectorRegistry

    return CollectorRegistry()


async def bench_lookup(n: int, lookups: int) -> None:
    rng = np.random.default_rng(n)
    started = time.perf_counter()
    cache, vectors, fake, scope = await _filled(n, rng)
    build_s = time.perf_counter() - started
    index = cache.index._index
    assert index is not None
    search: list[float] = []
    for _ in range(lookups):
        query = _unit(rng, 1)[0]
        t = time.perf_counter()
        index.search(scope, query, 4)
        search.append((time.perf_counter() - t) * 1000)
    # The same lookups under the default rule (guard, verifier) and the old one (cosine and
    # guard), interleaved so both see the same load; the difference is the verifier's cost.
    rules = {"verifier": cache._rule, "old rule": hit_rule(SemanticCache(threshold=0.92), None)}
    times: dict[str, list[float]] = {name: [] for name in rules}
    hits = dict.fromkeys(rules, 0)
    for i in range(lookups):
        if i % 2:
            base = vectors[rng.integers(n)] + 0.02 * _unit(rng, 1)[0]
            fake.next = (base / np.linalg.norm(base)).astype(np.float32)
        else:
            fake.next = _unit(rng, 1)[0]
        question = QUESTIONS[int(rng.integers(len(QUESTIONS)))]
        body = {"messages": [{"role": "user", "content": question}], "temperature": 0}
        for name, rule in rules.items():
            cache._rule = rule
            t = time.perf_counter()
            found = await cache.lookup_with("chat", "fast", body, {}, fake.next)
            times[name].append((time.perf_counter() - t) * 1000)
            hits[name] += found.status == "semantic"
    for name, ms in times.items():
        print(
            f"lookup n={n:>7}, {name}: p50 {percentile(ms, 50):.3f} ms  "
            f"p99 {percentile(ms, 99):.3f} ms  max {max(ms):.3f} ms  "
            f"semantic hits {hits[name]}/{lookups}  (filled in {build_s:.1f} s)"
        )
    print(
        f"  FAISS search alone: p50 {percentile(search, 50):.3f} ms  "
        f"p99 {percentile(search, 99):.3f} ms"
    )
    await cache.close()


def bench_verifier(lookups: int) -> None:
    rule = hit_rule(SemanticCache(), load_verifier())
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
    for n in args.sizes:
        await bench_lookup(n, args.lookups)
    if args.seconds > 0:
        started = time.perf_counter()
        encoder = SentenceEncoder(threads=args.threads)
        print(f"model loaded in {time.perf_counter() - started:.2f} s (torch import included)")
        batcher = MicroBatcher(encoder, max_batch=32)
        await batcher.embed("warm up")
        for level in args.levels:
            await bench_embedding(level, args.seconds, batcher)
        await batcher.close()


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    faiss.omp_set_num_threads(1)  # as in the cache's index thread
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000])
    parser.add_argument("--lookups", type=int, default=2000)
    parser.add_argument("--levels", type=int, nargs="*", default=[1, 4, 16, 64])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
