"""Precision and recall of the semantic cache's match decision on the labelled pairs.

``python -m tests.unit.cache.evaluate`` prints them per threshold, with and without the
guard, and the false hits at the default threshold. The decision under test is the
cache's own: cosine of the real embeddings at or above the threshold, then the guard.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from gateway.cache.guard import refusal
from gateway.embedding import Encoder
from gateway.policy.schema import SemanticCache
from tests.unit.cache.pairs import NEGATIVES, PARAPHRASES


@dataclass(frozen=True)
class Scored:
    domain: str
    kind: str  # "paraphrase" or the kind of hard negative
    a: str
    b: str
    cosine: float
    refused: str | None

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
    return [
        Scored(d, k, a, b, float(c), refusal(a, b))
        for (d, k, a, b), c in zip(rows, cosines, strict=True)
    ]


def measure(scored: Sequence[Scored], threshold: float, guard: bool = True) -> Result:
    hits = [s for s in scored if s.hit(threshold, guard)]
    true = sum(1 for s in hits if s.positive)
    positives = sum(1 for s in scored if s.positive)
    precision = true / len(hits) if hits else 1.0
    return Result(threshold, precision, true / positives, len(hits) - true, len(hits))


def main() -> None:
    from gateway.embedding import SentenceEncoder

    scored = score(SentenceEncoder())
    default = SemanticCache().threshold
    print(f"{len(scored)} pairs: {sum(s.positive for s in scored)} paraphrases")
    print("threshold | guard: precision recall false-hits | no guard: precision recall")
    for t in (0.75, 0.8, 0.85, 0.88, 0.9, 0.92, 0.94, 0.96):
        g, n = measure(scored, t), measure(scored, t, guard=False)
        print(
            f"{t:.2f} | {g.precision:.3f} {g.recall:.3f} {g.false_hits:3d} | "
            f"{n.precision:.3f} {n.recall:.3f}"
        )
    print(f"false hits at the default threshold {default}:")
    for s in scored:
        if s.hit(default) and not s.positive:
            print(f"  {s.kind}: {s.cosine:.3f} {s.a!r} ~ {s.b!r}")
    print("paraphrases refused by the guard:")
    for s in scored:
        if s.positive and s.refused and s.cosine >= default:
            print(f"  {s.refused}: {s.a!r} ~ {s.b!r}")


if __name__ == "__main__":
    main()
