"""Benchmark: how often the semantic cache serves a right answer, on data nobody here wrote.

``python -m loadtests.cache_quality [--datasets ../shared/datasets]``

Each pair: the first question is cached, the second asked; a hit is what the cache's own
hit rule decides (``gateway/cache/judgement/verdict.py``) for the two texts and their real
all-MiniLM-L6-v2 embeddings. Sets:
- QQP test split (index % 5 == 0; never fitted or tuned on): the natural label mix (all
  16,171 pairs, 38% duplicates) and a balanced sample (every duplicate and as many
  non-duplicates drawn with ``--seed``);
- GPTCache's paraphrase pairs (``qqp/paraphrase_mock.json``, 999 positives: recall only);
- the near-miss evaluation set written for issue 21 (``kit/near_miss_eval.jsonl``:
  code, SQL, conversion direction, lower-case entities, antonyms, dosage, audience, with
  paraphrases of the same questions), which nothing is fitted on.
Rules: cosine alone at the old default 0.92; cosine and guard at 0.92 (the old shipped
default); the verifier at the default ``max_false_hit_rate`` (0.1), and at the rates of
``--rates``. Precision is the share of hits whose pair is a duplicate; recall the share of
duplicates that hit. Prints a table (markdown) and the near-miss set's false hits.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gateway.cache.judgement.verdict import HitRule, Question, hit_rule
from gateway.cache.judgement.verifier import Verifier, load_verifier
from gateway.embedding import SentenceEncoder, Vectors
from gateway.schema import SemanticCache
from loadtests.kit.cache_pairs import (
    DEFAULT_DATASETS,
    NEAR_MISS_EVAL,
    DataMissing,
    Pair,
    load_paraphrases,
    load_qqp,
    load_written,
    texts_of,
)
from loadtests.kit.embedding_store import DEFAULT_DIR, EmbeddingStore

OLD_THRESHOLD = 0.92


@dataclass(frozen=True)
class Score:
    precision: float | None  # None: no negatives in the set, or no hit
    recall: float
    hits: int
    false_hits: int


def decide(rule: HitRule, pairs: Sequence[Pair], vectors_of: dict[str, Vectors]) -> list[bool]:
    out = []
    for p in pairs:
        va, vb = vectors_of[p.a], vectors_of[p.b]
        cosine = float(np.dot(va, vb))
        out.append(rule.refusal(Question(p.b, vb), p.a, va, cosine) is None)
    return out


def score(pairs: Sequence[Pair], hits: Sequence[bool]) -> Score:
    true = sum(1 for p, h in zip(pairs, hits, strict=True) if h and p.label)
    total = sum(hits)
    positives = sum(p.label for p in pairs)
    has_negatives = any(not p.label for p in pairs)
    precision = true / total if total and has_negatives else None
    return Score(precision, true / max(1, positives), total, total - true)


def balanced(pairs: Sequence[Pair], seed: int) -> list[Pair]:
    positives = [p for p in pairs if p.label]
    negatives = [p for p in pairs if not p.label]
    rng = np.random.default_rng(seed)
    drawn = rng.choice(len(negatives), size=min(len(positives), len(negatives)), replace=False)
    return positives + [negatives[i] for i in sorted(drawn)]


def rules(verifier: Verifier, rates: Sequence[float]) -> dict[str, HitRule]:
    default = SemanticCache().max_false_hit_rate
    out = {
        f"cosine >= {OLD_THRESHOLD}": hit_rule(
            SemanticCache(threshold=OLD_THRESHOLD, guard=False), None
        ),
        f"cosine >= {OLD_THRESHOLD} + guard (old default)": hit_rule(
            SemanticCache(threshold=OLD_THRESHOLD), None
        ),
    }
    for rate in sorted({default, *rates}):
        name = f"verifier, max_false_hit_rate {rate}" + (" (default)" if rate == default else "")
        out[name] = hit_rule(SemanticCache(max_false_hit_rate=rate), verifier)
    return out


def _cell(s: Score, *, with_precision: bool = True) -> str:
    recall = f"R {s.recall:.3f}"
    if not with_precision:
        return recall
    precision = "-" if s.precision is None else f"{s.precision:.3f}"
    return f"P {precision} / {recall} ({s.false_hits} false)"


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    args = _parser().parse_args(argv)
    try:
        natural = load_qqp(args.datasets, "test")
        paraphrases = load_paraphrases(args.datasets)
    except DataMissing as exc:
        print(f"cache_quality: {exc}", file=sys.stderr)
        return 2
    sets = {
        "QQP test, natural mix": natural,
        "QQP test, balanced": balanced(natural, args.seed),
        "GPTCache paraphrases": paraphrases,
        "near-miss set": load_written(NEAR_MISS_EVAL),
    }
    store = EmbeddingStore(SentenceEncoder(threads=args.threads), args.embeddings)
    texts = texts_of([p for pairs in sets.values() for p in pairs])
    vectors_of = dict(zip(texts, store.vectors(texts), strict=True))
    verifier = load_verifier(args.verifier)
    print(_header(sets))
    near_miss = sets["near-miss set"]
    for name, rule in rules(verifier, args.rates).items():
        cells = []
        for set_name, pairs in sets.items():
            result = score(pairs, decide(rule, pairs, vectors_of))
            cells.append(_cell(result, with_precision=set_name != "GPTCache paraphrases"))
        print(f"| {name} | " + " | ".join(cells) + " |")
    _false_hits(rules(verifier, [])[_default_name()], near_miss, vectors_of)
    return 0


def _header(sets: dict[str, list[Pair]]) -> str:
    names = [f"{name} ({len(p)}; {sum(x.label for x in p)} dup.)" for name, p in sets.items()]
    return "| rule | " + " | ".join(names) + " |\n|---|" + "---|" * len(names)


def _default_name() -> str:
    return f"verifier, max_false_hit_rate {SemanticCache().max_false_hit_rate} (default)"


def _false_hits(rule: HitRule, pairs: Sequence[Pair], vectors_of: dict[str, Vectors]) -> None:
    print("\nnear-miss set, verifier at the default: false hits and missed paraphrases by kind")
    hits = decide(rule, pairs, vectors_of)
    for kind in sorted({p.kind for p in pairs}):
        rows = [(p, h) for p, h in zip(pairs, hits, strict=True) if p.kind == kind]
        false = [p for p, h in rows if h and not p.label]
        missed = sum(1 for p, h in rows if p.label and not h)
        positives = sum(p.label for p, _ in rows)
        print(f"  {kind}: {len(false)} false hits, {missed} of {positives} paraphrases missed")
        for p in false:
            print(f"    false hit: {p.a!r} ~ {p.b!r}")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m loadtests.cache_quality", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--datasets", type=Path, default=DEFAULT_DATASETS)
    parser.add_argument("--verifier", type=Path, default=None, help="weights (default: shipped)")
    parser.add_argument("--rates", type=float, nargs="*", default=[0.05, 0.15, 0.2])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--embeddings", type=Path, default=DEFAULT_DIR / "all-MiniLM-L6-v2.npz")
    parser.add_argument("--threads", type=int, default=2, help="torch threads for embedding")
    return parser
