"""ROC AUC, accuracy and positive share, checked on tables and against brute force."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.classify.fitting.evaluation import accuracy, positive_share, roc_auc


@pytest.mark.parametrize(
    ("scores", "labels", "auc"),
    [
        ([0.1, 0.2, 0.8, 0.9], [0, 0, 1, 1], 1.0),
        ([0.9, 0.8, 0.2, 0.1], [0, 0, 1, 1], 0.0),
        ([0.5, 0.5, 0.5, 0.5], [0, 1, 0, 1], 0.5),
        # pairs (pos, neg): (0.35>0.1) (0.35<0.4) (0.8>0.1) (0.8>0.4) -> 3/4
        ([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1], 0.75),
        # a tie between a positive and a negative counts one half: (1 + 0.5) / 2
        ([0.2, 0.5, 0.5], [0, 0, 1], 0.75),
        # positives 3, 2, 5 against negatives 1, 2: five wins and one tie -> 5.5 / 6
        ([3, 1, 2, 2, 5], [1, 0, 0, 1, 1], 5.5 / 6),
    ],
)
def test_auc_table(scores: list[float], labels: list[int], auc: float) -> None:
    assert roc_auc(scores, labels) == pytest.approx(auc)


def brute_force_auc(scores: list[float], labels: list[int]) -> float:
    pos = [s for s, y in zip(scores, labels, strict=True) if y]
    neg = [s for s, y in zip(scores, labels, strict=True) if not y]
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


@given(st.lists(st.tuples(st.integers(0, 5), st.booleans()), min_size=2, max_size=40))
def test_auc_matches_pairwise_counting(rows: list[tuple[int, bool]]) -> None:
    scores = [float(s) for s, _ in rows]
    labels = [int(y) for _, y in rows]
    if 0 < sum(labels) < len(labels):
        assert roc_auc(scores, labels) == pytest.approx(brute_force_auc(scores, labels))


def test_auc_needs_both_classes() -> None:
    with pytest.raises(ValueError, match="positive and one negative"):
        roc_auc([0.1, 0.2], [1, 1])
    with pytest.raises(ValueError, match="length"):
        roc_auc([0.1], [1, 0])


def test_accuracy_and_share() -> None:
    scores = [0.1, 0.6, 0.4, 0.9]
    labels = [0, 0, 1, 1]
    assert accuracy(scores, labels, 0.5) == 0.5
    assert accuracy(scores, labels, 0.3) == 0.75
    assert positive_share(scores, 0.5) == 0.5
    with pytest.raises(ValueError, match="at least one"):
        positive_share([], 0.5)
