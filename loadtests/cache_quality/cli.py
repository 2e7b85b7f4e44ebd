"""Benchmark: how often the semantic cache serves a right answer, on data nobody here wrote.

``python -m loadtests.cache_quality [--datasets ../shared/datasets]``

Each pair: the first question is cached, the second asked; a hit is what the cache's own
hit rule decides for the two texts and their real all-MiniLM-L6-v2 embeddings
(``kit/rule_scores.py``). Sets:
- QQP test split (index % 5 == 0; never fitted or tuned on): the natural label mix (all
  16,171 pairs, 38% duplicates) and a balanced sample (every duplicate and as many
  non-duplicates drawn with ``--seed``);
- GPTCache's paraphrase pairs (``qqp/paraphrase_mock.json``, 999 positives: recall only);
- the near-miss set written for issue 21 (``kit/near_miss_eval.jsonl``, less the
  pairs that share a text with the cross-encoder's written training pairs) and the
  fresh one written for issue 35 (``kit/fresh_eval.jsonl``: lower-case entities
  and places, versions and numbers, direction and conversion, ascending/descending, drug
  and audience, SQL and code operators, with paraphrases of the same questions); nothing is
  fitted on either.
Rules side by side: cosine only (>= 0.92, the old default threshold, no guard); the feature
verifier (today's) and the cross-encoder at the bounds of ``--rates`` (the default
``max_false_hit_rate`` marked), both with the guard. Precision is the share of hits whose
pair is a duplicate, recall the share of duplicates that hit, false-hit rate 1 - precision.
Then each family's P-CHR AUC on the QQP natural mix, the fresh set's false hits and missed
paraphrases at the default, and the anchors' published figures with their setups.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from gateway.cache.judgement.cross_encoder import CrossEncoder, CrossEncoderFile, shipped_path
from gateway.cache.judgement.cross_rule import floor_of, threshold_of
from gateway.cache.judgement.verdict import hit_rule
from gateway.cache.judgement.verifier import load_verifier
from gateway.embedding import SentenceEncoder
from gateway.schema import SemanticCache
from loadtests.cache_quality.anchors import anchors_table
from loadtests.kit.cache_pairs import (
    CROSS_TRAIN,
    DEFAULT_DATASETS,
    FRESH_EVAL,
    NEAR_MISS_EVAL,
    DataMissing,
    Pair,
    load_paraphrases,
    load_qqp,
    load_written,
    texts_of,
    unseen,
)
from loadtests.kit.embedding_store import DEFAULT_DIR, EmbeddingStore
from loadtests.kit.rule_scores import (
    Floats,
    Score,
    auc_of,
    cosines,
    cross_scores,
    feature_scores,
    hits_at,
)

OLD_THRESHOLD = 0.92
NATURAL, BALANCED, PARAPHRASES = "QQP test, natural", "QQP test, balanced", "GPTCache paraphrases"
OLD_SET, FRESH = "near-miss set (issue 21)", "fresh near-miss set (issue 35)"


def balanced(pairs: Sequence[Pair], seed: int) -> list[Pair]:
    positives = [p for p in pairs if p.label]
    negatives = [p for p in pairs if not p.label]
    rng = np.random.default_rng(seed)
    drawn = rng.choice(len(negatives), size=min(len(positives), len(negatives)), replace=False)
    return positives + [negatives[i] for i in sorted(drawn)]


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
    cross_path = args.cross_encoder or shipped_path()
    if cross_path is None:
        print(
            "cache_quality: no cross-encoder weights; build them with "
            "`python -m loadtests.fit.cross_encoder`",
            file=sys.stderr,
        )
        return 2
    sets = {
        NATURAL: natural,
        BALANCED: balanced(natural, args.seed),
        PARAPHRASES: paraphrases,
        # Less the few pairs sharing a text with the cross-encoder's training pairs.
        OLD_SET: unseen(load_written(NEAR_MISS_EVAL), load_written(CROSS_TRAIN)),
        FRESH: load_written(FRESH_EVAL),
    }
    import torch

    torch.set_num_threads(args.threads)
    store = EmbeddingStore(SentenceEncoder(threads=args.threads), args.embeddings)
    texts = texts_of([p for pairs in sets.values() for p in pairs])
    vectors_of = dict(zip(texts, store.vectors(texts), strict=True))
    verifier = load_verifier(args.verifier)
    weights = CrossEncoderFile.read(Path(cross_path))
    model = CrossEncoder(weights)
    floor = floor_of(weights)
    scores: dict[str, dict[str, Floats]] = {"cosine": {}, "features": {}, "cross": {}}
    memo: dict[tuple[str, str], float] = {}
    for name, pairs in sets.items():
        scores["cosine"][name] = cosines(pairs, vectors_of)
        scores["features"][name] = feature_scores(verifier, pairs, vectors_of)
        scores["cross"][name] = cross_scores(model, floor, pairs, vectors_of, memo=memo)
    default = SemanticCache().max_false_hit_rate
    rules: list[tuple[str, str, float]] = [(f"cosine >= {OLD_THRESHOLD}", "cosine", OLD_THRESHOLD)]
    for rate in sorted({default, *args.rates}):
        mark = " (default)" if rate == default else ""
        settings = SemanticCache(max_false_hit_rate=rate)
        feature_t = hit_rule(settings, verifier).threshold
        rules.append((f"feature verifier, bound {rate}{mark}", "features", feature_t))
        rules.append(
            (f"cross-encoder, bound {rate}{mark}", "cross", threshold_of(settings, weights))
        )
    names = [f"{n} ({len(p)}; {sum(x.label for x in p)} dup.)" for n, p in sets.items()]
    print("| rule | " + " | ".join(names) + " |\n|---|" + "---|" * len(names))
    for label, family, threshold in rules:
        cells = []
        for name, pairs in sets.items():
            result = hits_at(pairs, scores[family][name], threshold)
            cells.append(_cell(result, with_precision=name != PARAPHRASES))
        print(f"| {label} | " + " | ".join(cells) + " |")
    print(f"\nP-CHR AUC, {NATURAL} (precision over hit ratio up to a perfect cache's, normalised):")
    for family, title in (
        ("cosine", "cosine only"),
        ("features", "feature verifier + guard"),
        ("cross", "cross-encoder + guard"),
    ):
        print(f"  {title}: {auc_of(natural, scores[family][NATURAL]):.3f}")
    for name in (FRESH, OLD_SET):
        _misses(name, sets[name], scores["cross"][name], threshold_of(SemanticCache(), weights))
    print("\nAnchors (published; not measured here):")
    print("\n".join(anchors_table()))
    return 0


def _misses(name: str, pairs: Sequence[Pair], scores: Floats, threshold: float) -> None:
    print(f"\n{name}, cross-encoder at the default bound: false hits and missed paraphrases")
    hit = (scores >= threshold) & (scores > 0)
    for kind in sorted({p.kind for p in pairs}):
        rows = [(p, bool(h)) for p, h in zip(pairs, hit, strict=True) if p.kind == kind]
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
    parser.add_argument("--verifier", type=Path, default=None, help="feature verifier weights")
    parser.add_argument("--cross-encoder", type=Path, default=None, help="cross-encoder weights")
    parser.add_argument("--rates", type=float, nargs="*", default=[0.01, 0.05, 0.1, 0.2])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--embeddings", type=Path, default=DEFAULT_DIR / "all-MiniLM-L6-v2.npz")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    return parser
