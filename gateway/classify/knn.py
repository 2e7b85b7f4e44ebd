"""A k-nearest-neighbour vote over labelled exemplars, to blend into the difficulty score.

Algorithm: exemplar prompts are embedded once (unit vectors, the semantic cache's model);
for a request's embedding the ``k`` most similar exemplars (cosine, exact search: a few
hundred exemplars) vote, each with weight ``max(cosine, 0) ** sharpness``; the vote is the
weighted share of "hard" among them. The blended score is
``(1 - weight) * logistic_score + weight * vote``. Parameters: ``k`` (default 7),
``sharpness`` (default 4: near neighbours count much more), ``weight`` (default 0.3).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from gateway.classify.classifier import Classification

Vectors = npt.NDArray[np.float32]


@dataclass(frozen=True)
class KnnVote:
    exemplars: Vectors  # (n, dim), unit rows
    hard: npt.NDArray[np.float32]  # (n,), 1.0 hard / 0.0 easy
    k: int = 7
    sharpness: float = 4.0
    weight: float = 0.3

    @classmethod
    def build(cls, vectors: Vectors, labels: Sequence[int], **params: float) -> KnnVote:
        hard = np.asarray(labels, dtype=np.float32)
        return cls(np.ascontiguousarray(vectors, dtype=np.float32), hard, **params)  # type: ignore[arg-type]

    def vote(self, vector: Vectors) -> float:
        sims = self.exemplars @ vector
        k = min(self.k, len(sims))
        top = np.argpartition(-sims, k - 1)[:k]
        weights = np.maximum(sims[top], 0.0) ** self.sharpness
        total = float(weights.sum())
        if total <= 0.0:
            return 0.5
        return float((weights * self.hard[top]).sum() / total)

    def blend(self, score: float, vector: Vectors) -> float:
        return (1.0 - self.weight) * score + self.weight * self.vote(vector)


def blend_vote(
    classes: Classification, vote: float, weight: float, threshold: float
) -> Classification:
    """``classes`` with its difficulty score blended with a kNN ``vote``, judged again."""
    score = (1.0 - weight) * classes.difficulty.score + weight * vote
    difficulty = replace(classes.difficulty, score=score, hard=score >= threshold)
    return replace(classes, difficulty=difficulty)
