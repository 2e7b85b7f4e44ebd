"""Scores of the semantic cache's hit rules on question pairs, for the quality benchmark.

Each rule family gives every pair (cached question ``a``, asked ``b``) one score, 0 when the
runtime refuses the pair before scoring it, so that "score >= t" is exactly the runtime's
decision at threshold ``t`` (``gateway/cache/judgement/verdict.py``, ``cross_rule.py``):
- ``cosine``: the embeddings' cosine (the guard not applied: cosine only);
- ``features``: the feature verifier's probability, 0 below its cosine floor or when the
  guard refuses the pair (the default ``guard: true``);
- ``cross``: the cross-encoder's probability, 0 below its cosine floor or when the guard
  refuses the pair; as the cache runs it, on the pair's own cached question (a single
  candidate).
``hits_at`` then reads a rule at any threshold, and ``chr_auc`` the P-CHR AUC of a family.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from gateway.cache.judgement.cross_encoder import CrossEncoder
from gateway.cache.judgement.false_hit_bound import chr_auc
from gateway.cache.judgement.verdict import HitRule, Question
from gateway.cache.judgement.verifier import Verifier
from gateway.embedding import Vectors
from loadtests.kit.cache_pairs import Pair

log = logging.getLogger(__name__)
Floats = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Score:
    precision: float | None  # None: no negatives in the set, or no hit
    recall: float
    hits: int
    false_hits: int

    @property
    def false_hit_rate(self) -> float | None:
        return None if self.precision is None else 1.0 - self.precision


def cosines(pairs: Sequence[Pair], vectors_of: dict[str, Vectors]) -> Floats:
    return np.array([float(np.dot(vectors_of[p.a], vectors_of[p.b])) for p in pairs])


def passes(rule: HitRule, pairs: Sequence[Pair], vectors_of: dict[str, Vectors]) -> list[bool]:
    """Whether each pair passes ``rule`` (floor, guard, feature verifier if it has one)."""
    out = []
    for p in pairs:
        va, vb = vectors_of[p.a], vectors_of[p.b]
        out.append(rule.refusal(Question(p.b, vb), p.a, va, float(np.dot(va, vb))) is None)
    return out


def feature_scores(
    verifier: Verifier, pairs: Sequence[Pair], vectors_of: dict[str, Vectors]
) -> Floats:
    cheap = passes(HitRule(guard=True, floor=verifier.min_cosine), pairs, vectors_of)
    rule = HitRule(guard=True, floor=verifier.min_cosine, verifier=verifier)
    out = np.zeros(len(pairs))
    for i, (p, ok) in enumerate(zip(pairs, cheap, strict=True)):
        if ok:
            out[i] = verifier.probability(
                rule.views(p.a),
                Question(p.b, vectors_of[p.b]).view,
                vectors_of[p.a],
                vectors_of[p.b],
            )
    return out


def cross_scores(
    model: CrossEncoder,
    floor: float,
    pairs: Sequence[Pair],
    vectors_of: dict[str, Vectors],
    *,
    guard: bool = True,
    batch: int = 64,
    memo: dict[tuple[str, str], float] | None = None,
) -> Floats:
    """``memo`` keeps scores across calls (sets that share pairs are scored once)."""
    memo = {} if memo is None else memo
    cheap = passes(HitRule(guard=guard, floor=floor), pairs, vectors_of)
    out = np.zeros(len(pairs))
    for i, ok in enumerate(cheap):
        if ok and (pairs[i].a, pairs[i].b) in memo:
            out[i] = memo[pairs[i].a, pairs[i].b]
    rows = [i for i, ok in enumerate(cheap) if ok and (pairs[i].a, pairs[i].b) not in memo]
    started = time.monotonic()
    for k in range(0, len(rows), batch):
        chunk = rows[k : k + batch]
        out[chunk] = model.score([(pairs[i].a, pairs[i].b) for i in chunk])
        memo.update(((pairs[i].a, pairs[i].b), float(out[i])) for i in chunk)
        if (k // batch) % 50 == 49:
            log.info(
                "cross-encoder: %d of %d pairs (%.0f s)",
                k + batch,
                len(rows),
                time.monotonic() - started,
            )
    return out


def hits_at(pairs: Sequence[Pair], scores: Floats, threshold: float) -> Score:
    labels = np.array([p.label for p in pairs], bool)
    hit = (scores >= threshold) & (scores > 0)
    total, true = int(hit.sum()), int((hit & labels).sum())
    has_negatives = bool((~labels).any())
    precision = true / total if total and has_negatives else None
    return Score(precision, true / max(1, int(labels.sum())), total, total - true)


def auc_of(pairs: Sequence[Pair], scores: Floats) -> float:
    """P-CHR AUC of a score over ``pairs`` (refused pairs, score 0, never hit)."""
    labels = np.array([p.label for p in pairs], np.float64)
    order = np.argsort(-scores, kind="stable")
    s, y = scores[order], labels[order]
    keep = np.flatnonzero(np.r_[s[1:] != s[:-1], True])
    keep = keep[s[keep] > 0]
    hits = keep + 1
    false = hits - np.cumsum(y)[keep]
    return chr_auc(hits, false, len(pairs), int(labels.sum()))
