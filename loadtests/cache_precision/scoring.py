"""Precision and recall of the semantic cache's match decision on hand-labelled pairs.

The pairs (``pairs.jsonl``: ``{"domain", "kind", "a", "b"}``, written by hand in ten
domains): may an answer to ``a`` be served for ``b``? ``kind`` ``paraphrase`` pairs deserve
the same answer (positives); the hard negatives look alike but need different answers:
``negation`` (polarity flipped), ``number`` (other quantities), ``date`` (other days,
months, times), ``entity`` (other names, places, products), ``unit`` (other units or
currencies) and ``intent`` (mostly the same words, another question). None is fitted on.

``score`` embeds both texts of every pair and records the cosine, the guard's refusal and
whether the default hit rule (guard and verifier) serves it; ``measure`` gives precision and
recall of the old rule (cosine at or above a threshold, then the guard, or not) and
``measure_verifier`` those of the default rule.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gateway.cache.judgement.guard import refusal
from gateway.cache.judgement.verdict import Question, hit_rule
from gateway.cache.judgement.verifier import load_verifier
from gateway.embedding import Encoder
from gateway.schema import SemanticCache

PAIRS = Path(__file__).resolve().parent / "pairs.jsonl"
OLD_THRESHOLD = 0.92  # the old rule's default, for policies that still set `threshold`


@dataclass(frozen=True)
class Scored:
    domain: str
    kind: str  # "paraphrase" or the kind of hard negative
    a: str
    b: str
    cosine: float
    refused: str | None
    verified: bool  # the default hit rule (guard and verifier) serves it

    @property
    def positive(self) -> bool:
        return self.kind == "paraphrase"

    def hit(self, threshold: float, guard: bool = True) -> bool:
        return self.cosine >= threshold and not (guard and self.refused)


@dataclass(frozen=True)
class Result:
    threshold: float
    precision: float
    recall: float
    false_hits: int
    hits: int


def labelled(path: Path = PAIRS) -> list[tuple[str, str, str, str]]:
    """(domain, kind, a, b) for every pair, in file order."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [(r["domain"], r["kind"], r["a"], r["b"]) for r in rows]


def score(encoder: Encoder) -> list[Scored]:
    rows = labelled()
    va = encoder.encode([r[2] for r in rows])
    vb = encoder.encode([r[3] for r in rows])
    cosines = np.sum(va * vb, axis=1)
    rule = hit_rule(SemanticCache(), load_verifier())
    return [
        Scored(d, k, a, b, float(c), refusal(a, b), rule.refusal(Question(b, y), a, x, c) is None)
        for (d, k, a, b), x, y, c in zip(rows, va, vb, cosines.tolist(), strict=True)
    ]


def measure_verifier(scored: Sequence[Scored]) -> Result:
    """Precision and recall of the default hit rule (the verifier at its default)."""
    hits = [s for s in scored if s.verified]
    true = sum(1 for s in hits if s.positive)
    positives = sum(1 for s in scored if s.positive)
    precision = true / len(hits) if hits else 1.0
    return Result(float("nan"), precision, true / positives, len(hits) - true, len(hits))


def measure(scored: Sequence[Scored], threshold: float, guard: bool = True) -> Result:
    hits = [s for s in scored if s.hit(threshold, guard)]
    true = sum(1 for s in hits if s.positive)
    positives = sum(1 for s in scored if s.positive)
    precision = true / len(hits) if hits else 1.0
    return Result(threshold, precision, true / positives, len(hits) - true, len(hits))
