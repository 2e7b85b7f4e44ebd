"""Precision and recall of the semantic cache's match decision on the labelled pairs.

``python -m tests.unit.cache.evaluate`` prints them per threshold of the old rule (cosine
of the real embeddings at or above the threshold, then the guard), with and without the
guard, the false hits at the old default threshold 0.92, and the verifier's figures at its
default (none of these pairs is fitted on).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from gateway.cache.decision import Question, hit_rule
from gateway.cache.guard import refusal
from gateway.cache.verifier import load_verifier
from gateway.embedding import Encoder
from gateway.policy.schema import SemanticCache
from tests.unit.cache.pairs import NEGATIVES, PARAPHRASES

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


def labelled() -> list[tuple[str, str, str, str]]:
    rows = [(d, "paraphrase", a, b) for d, a, b in PARAPHRASES]
    for kind, pairs in NEGATIVES.items():
        rows += [(d, kind, a, b) for d, a, b in pairs]
    return rows


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


def main() -> None:
    from gateway.embedding import SentenceEncoder

    scored = score(SentenceEncoder())
    default = OLD_THRESHOLD
    print(f"{len(scored)} pairs: {sum(s.positive for s in scored)} paraphrases")
    print("threshold | guard: precision recall false-hits | no guard: precision recall")
    for t in (0.75, 0.8, 0.85, 0.88, 0.9, 0.92, 0.94, 0.96):
        g, n = measure(scored, t), measure(scored, t, guard=False)
        print(
            f"{t:.2f} | {g.precision:.3f} {g.recall:.3f} {g.false_hits:3d} | "
            f"{n.precision:.3f} {n.recall:.3f}"
        )
    v = measure_verifier(scored)
    print(
        f"verifier at max_false_hit_rate {SemanticCache().max_false_hit_rate}: precision "
        f"{v.precision:.3f} recall {v.recall:.3f} false hits {v.false_hits}"
    )
    for s in scored:
        if s.verified and not s.positive:
            print(f"  verifier false hit, {s.kind}: {s.cosine:.3f} {s.a!r} ~ {s.b!r}")
    print(f"false hits of the old rule at {default}:")
    for s in scored:
        if s.hit(default) and not s.positive:
            print(f"  {s.kind}: {s.cosine:.3f} {s.a!r} ~ {s.b!r}")
    print("paraphrases refused by the guard:")
    for s in scored:
        if s.positive and s.refused and s.cosine >= default:
            print(f"  {s.refused}: {s.a!r} ~ {s.b!r}")


if __name__ == "__main__":
    main()
