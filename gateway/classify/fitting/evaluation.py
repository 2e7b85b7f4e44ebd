"""Evaluation of a binary scorer: ROC AUC, accuracy and the share predicted positive.

ROC AUC is the probability that a random positive scores above a random negative, ties
counting one half; it equals the Mann-Whitney U statistic over (positives x negatives).
Computed from ranks: sort the scores, give tied scores their average rank, then
``AUC = (R+ - n+(n+ + 1)/2) / (n+ n-)`` with ``R+`` the rank sum of the positives.
O(n log n), no dependencies.
"""

from __future__ import annotations

from collections.abc import Sequence


def roc_auc(scores: Sequence[float], labels: Sequence[int]) -> float:
    """Area under the ROC curve of ``scores`` for 0/1 ``labels``."""
    if len(scores) != len(labels):
        raise ValueError("scores and labels differ in length")
    positives = sum(1 for label in labels if label)
    negatives = len(labels) - positives
    if positives == 0 or negatives == 0:
        raise ValueError("ROC AUC needs at least one positive and one negative label")
    ranks = _average_ranks(scores)
    rank_sum = sum(rank for rank, label in zip(ranks, labels, strict=True) if label)
    return (rank_sum - positives * (positives + 1) / 2) / (positives * negatives)


def _average_ranks(scores: Sequence[float]) -> list[float]:
    """1-based ranks of ``scores``, ties sharing the average of their ranks."""
    order = sorted(range(len(scores)), key=scores.__getitem__)
    ranks = [0.0] * len(scores)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and scores[order[end + 1]] == scores[order[start]]:
            end += 1
        shared = (start + end) / 2 + 1
        for k in range(start, end + 1):
            ranks[order[k]] = shared
        start = end + 1
    return ranks


def accuracy(scores: Sequence[float], labels: Sequence[int], threshold: float) -> float:
    """Share of rows where ``score >= threshold`` agrees with the label."""
    if not scores or len(scores) != len(labels):
        raise ValueError("need equally many scores and labels, at least one")
    hits = sum(
        1 for s, label in zip(scores, labels, strict=True) if (s >= threshold) == bool(label)
    )
    return hits / len(scores)


def positive_share(scores: Sequence[float], threshold: float) -> float:
    """Share of rows whose score reaches ``threshold``."""
    if not scores:
        raise ValueError("need at least one score")
    return sum(1 for s in scores if s >= threshold) / len(scores)
