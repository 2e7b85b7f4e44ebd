"""Benchmark: what sampled verification of semantic hits buys, and what it costs.

``python -m loadtests.cache_verification [--datasets ../shared/datasets] [--samples 0 0.1 0.3]
[--rules cross old features-0.1]``

A replay of a question stream against the semantic cache's hit rule, with per-entry evidence
(``gateway/cache/store/evidence.py``) and the backend simulated by the pair's label. Data: the QQP
test split (index % 5 == 0, natural label mix; never fitted or tuned on) and the near-miss
evaluation set written for issue 21 (``kit/near_miss_eval.jsonl``), with their real
all-MiniLM-L6-v2 embeddings (``.cache/cache-quality``). Each pair is (cached question ``a``,
asked question ``b``, label): ``a``'s answer is in the cache, and a duplicate's backend answer
is the same as ``a``'s, a non-duplicate's a different one.

The stream: ``--asks`` asks drawn from the pairs with Zipf popularity (exponent ``--zipf``;
popular questions come back, as in a FAQ workload), seeded. An ask of ``b``:
- an exact hit when ``b``'s own answer was stored by an earlier miss (always right; not
  counted in precision or recall);
- a semantic hit when the hit rule accepts the pair and ``a``'s evidence does not refuse it;
  rules (``--rules``): ``cross``, the default (the cross-encoder at the default
  ``max_false_hit_rate``, guard on; ``cross-<rate>`` at that bound); ``old``, a static
  threshold (cosine >= 0.92, then the guard: the rule shipped before the verifiers);
  ``features-<rate>``, the feature verifier at that bound (``features-0.1`` was the
  shipped default before issue 35);
  right when the pair is a duplicate. A served hit is drawn for verification with
  probability ``sample``: one extra backend call, whose answer agrees when the pair is a
  duplicate, and ``a``'s evidence is updated (a disagreement raises ``a``'s least cosine
  above this pair's; after ``max_disagreements``, exact hits only);
- otherwise a miss: a backend call, and ``b``'s answer is stored.
Without verification a wrong hit repeats on every ask of ``b`` until the entry expires (a
hit stores nothing); with it, a sampled wrong hit is the last. The stream is cut into
``--windows`` equal windows, and ``--seeds`` streams are replayed (counts summed: with Zipf
popularity one stream's figures hang on which pairs drew the top ranks); per window:
semantic hits, their precision, recall (right semantic hits over asks of duplicates that
were not exact hits), wrong answers served, and backend calls (misses plus verifications).
The verification settings are the policy's defaults (``margin``, ``max_disagreements``).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from gateway.cache.judgement.cross_encoder import CrossEncoder, CrossEncoderFile, shipped_path
from gateway.cache.judgement.cross_rule import floor_of, threshold_of
from gateway.cache.judgement.verdict import HitRule, hit_rule
from gateway.cache.judgement.verifier import load_verifier
from gateway.cache.store.evidence import NONE, Evidence
from gateway.embedding import SentenceEncoder
from gateway.schema import CacheVerify, SemanticCache
from loadtests.kit.cache_pairs import (
    DEFAULT_DATASETS,
    NEAR_MISS_EVAL,
    DataMissing,
    Pair,
    load_qqp,
    load_written,
    texts_of,
)
from loadtests.kit.embedding_store import DEFAULT_DIR, EmbeddingStore
from loadtests.kit.rule_scores import cross_scores, passes


@dataclass
class Window:
    asks: int = 0
    exact: int = 0
    hits: int = 0
    right_hits: int = 0
    duplicate_asks: int = 0  # asks of duplicates that reached the semantic lookup
    misses: int = 0
    verifications: int = 0

    @property
    def precision(self) -> float | None:
        return self.right_hits / self.hits if self.hits else None

    @property
    def recall(self) -> float | None:
        return self.right_hits / self.duplicate_asks if self.duplicate_asks else None

    @property
    def backend_calls(self) -> int:
        return self.misses + self.verifications

    def add(self, other: Window) -> None:
        for name in vars(self):
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass
class Replay:
    """The cache's state along the stream: each entry's evidence, the answers stored."""

    settings: CacheVerify
    evidence: dict[str, Evidence] = field(default_factory=dict)
    stored: set[str] = field(default_factory=set)

    def ask(self, pair: Pair, rule_hit: bool, cosine: float, drawn: float, w: Window) -> None:
        w.asks += 1
        if pair.b in self.stored:
            w.exact += 1
            return
        w.duplicate_asks += pair.label
        evidence = self.evidence.get(pair.a, NONE)
        refused = evidence.refusal(cosine, self.settings.max_disagreements)
        if not rule_hit or refused is not None:
            w.misses += 1
            self.stored.add(pair.b)
            return
        w.hits += 1
        w.right_hits += pair.label
        if drawn < self.settings.sample:
            w.verifications += 1
            agreed = bool(pair.label)  # the backend's answer: the same for a duplicate
            margin = self.settings.margin
            self.evidence[pair.a] = evidence.after(agreed=agreed, cosine=cosine, margin=margin)


def replay(
    pairs: Sequence[Pair],
    rule_hits: Sequence[bool],
    cosines: Sequence[float],
    order: Sequence[int],
    draws: Sequence[float],
    settings: CacheVerify,
    windows: int,
) -> list[Window]:
    """The stream ``order`` (indices into ``pairs``) replayed; ``draws`` are the uniform
    numbers that sample its hits. Pure: the same inputs give the same windows."""
    state = Replay(settings)
    out = [Window() for _ in range(windows)]
    size = -(-len(order) // windows)
    for step, i in enumerate(order):
        state.ask(pairs[i], rule_hits[i], cosines[i], draws[step], out[step // size])
    return out


def zipf_stream(n_pairs: int, asks: int, exponent: float, seed: int) -> list[int]:
    """``asks`` pair indices, pair of popularity rank r drawn with weight r^-exponent (ranks
    dealt at random)."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, n_pairs + 1) ** exponent
    ranked = rng.permutation(n_pairs)
    picks = rng.choice(n_pairs, size=asks, p=weights / weights.sum())
    return [int(ranked[p]) for p in picks]


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _row(name: str, sample: float, label: str, w: Window) -> str:
    return (
        f"| {name} | {sample} | {label} | {w.hits} | {_fmt(w.precision)} | {_fmt(w.recall)} "
        f"| {w.hits - w.right_hits} | {w.backend_calls} ({w.verifications}) |"
    )


def rule_hits_of(
    rule: str, pairs: list[Pair], vectors: dict[str, np.ndarray], args: argparse.Namespace
) -> list[bool]:
    """Whether ``rule`` serves each pair (its cached question against the asked one)."""
    if rule == "old":
        return passes(HitRule(guard=True, floor=0.92), pairs, vectors)
    if rule.startswith("features-"):
        settings = SemanticCache(max_false_hit_rate=float(rule.removeprefix("features-")))
        return passes(hit_rule(settings, load_verifier(args.verifier)), pairs, vectors)
    if rule != "cross" and not rule.startswith("cross-"):
        raise ValueError(f"unknown rule {rule!r}")
    rate = float(rule.removeprefix("cross-")) if rule != "cross" else None
    path = args.cross_encoder or shipped_path()
    if path is None:
        raise ValueError("no cross-encoder weights (python -m loadtests.fit.cross_encoder)")
    weights = CrossEncoderFile.read(Path(path))
    scores = cross_scores(CrossEncoder(weights), floor_of(weights), pairs, vectors)
    settings = SemanticCache() if rate is None else SemanticCache(max_false_hit_rate=rate)
    threshold = threshold_of(settings, weights)
    return [bool(s > 0 and s >= threshold) for s in scores]


def run_set(
    name: str, pairs: list[Pair], vectors: dict[str, np.ndarray], args: argparse.Namespace
) -> None:
    """Each rule and sampling share over the same streams (one per seed; counts summed)."""
    for rule in args.rules:
        run_rule(f"{name}, {rule}", rule_hits_of(rule, pairs, vectors, args), pairs, vectors, args)


def run_rule(
    name: str,
    rule_hits: list[bool],
    pairs: list[Pair],
    vectors: dict[str, np.ndarray],
    args: argparse.Namespace,
) -> None:
    cosines = [float(np.dot(vectors[p.a], vectors[p.b])) for p in pairs]
    asks = args.asks_per_pair * len(pairs)
    streams = []
    for seed in range(args.seed, args.seed + args.seeds):
        order = zipf_stream(len(pairs), asks, args.zipf, seed)
        streams.append((order, np.random.default_rng(seed + 10_000).random(asks).tolist()))
    for sample in args.samples:
        settings = CacheVerify(sample=sample)
        summed = [Window() for _ in range(args.windows)]
        for order, draws in streams:
            windows = replay(pairs, rule_hits, cosines, order, draws, settings, args.windows)
            for into, window in zip(summed, windows, strict=True):
                into.add(window)
        total = Window()
        for index, window in enumerate(summed, 1):
            total.add(window)
            print(_row(name, sample, f"{index}/{args.windows}", window))
        print(_row(name, sample, "**all**", total))


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    args = _parser().parse_args(argv)
    try:
        sets = {
            "QQP test, natural": load_qqp(args.datasets, "test"),
            "near-miss set": load_written(NEAR_MISS_EVAL),
        }
    except DataMissing as exc:
        print(f"cache_verification: {exc}", file=sys.stderr)
        return 2
    store = EmbeddingStore(SentenceEncoder(threads=args.threads), args.embeddings)
    texts = texts_of([p for pairs in sets.values() for p in pairs])
    vectors = dict(zip(texts, store.vectors(texts), strict=True))
    print(
        f"{args.asks_per_pair} asks per pair, Zipf {args.zipf}, seeds {args.seed} to "
        f"{args.seed + args.seeds - 1} (counts summed over them); backend calls: misses + "
        "verifications (verifications in brackets)\n"
    )
    print("| set, rule | sample | window | semantic hits | precision | recall | wrong answers "
          "| backend calls |\n|---|---|---|---|---|---|---|---|")  # fmt: skip
    for name, pairs in sets.items():
        run_set(name, pairs, vectors, args)
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m loadtests.cache_verification", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--datasets", type=Path, default=DEFAULT_DATASETS)
    parser.add_argument("--verifier", type=Path, default=None, help="feature verifier weights")
    parser.add_argument("--cross-encoder", type=Path, default=None, help="its weights")
    parser.add_argument("--rules", nargs="+", default=["cross", "old", "features-0.1"])
    parser.add_argument("--samples", type=float, nargs="+", default=[0.0, 0.1, 0.3])
    parser.add_argument("--asks-per-pair", type=int, default=4)
    parser.add_argument("--zipf", type=float, default=1.0)
    parser.add_argument("--windows", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0, help="the first seed")
    parser.add_argument("--seeds", type=int, default=5, help="streams replayed, counts summed")
    parser.add_argument("--embeddings", type=Path, default=DEFAULT_DIR / "all-MiniLM-L6-v2.npz")
    parser.add_argument("--threads", type=int, default=1, help="torch threads for embedding")
    return parser
