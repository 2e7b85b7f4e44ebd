from __future__ import annotations

import numpy as np

from gateway.classify.knn import KnnVote


def test_nearest_exemplars_decide_the_vote() -> None:
    exemplars = np.array([[1, 0], [0.9, 0.436], [0, 1], [-1, 0]], dtype=np.float32)
    knn = KnnVote.build(exemplars, [1, 1, 0, 0], k=2, weight=0.5)
    assert knn.vote(np.array([1, 0], dtype=np.float32)) == 1.0
    assert knn.vote(np.array([0, 1], dtype=np.float32)) < 0.5
    assert knn.blend(0.2, np.array([1, 0], dtype=np.float32)) == 0.6


def test_no_similar_exemplar_is_a_neutral_vote() -> None:
    knn = KnnVote.build(np.array([[1, 0]], dtype=np.float32), [1], k=1)
    assert knn.vote(np.array([-1, 0], dtype=np.float32)) == 0.5
