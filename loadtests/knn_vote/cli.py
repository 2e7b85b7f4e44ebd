"""Does a kNN vote over embedded exemplars improve the difficulty score? Held-out figures.

``python -m loadtests.knn_vote``: on each stratified half (and on templated ->
hand-written), the logistic score fitted on the other part alone, then blended with a kNN
vote whose exemplars are that other part, for a few blend weights.
"""

from __future__ import annotations

from gateway.classify import request_features
from gateway.classify.fitting.evaluation import roc_auc
from gateway.classify.knn import KnnVote
from gateway.embedding import SentenceEncoder
from loadtests.kit.difficulty_set.handwritten import ALL as HANDWRITTEN
from loadtests.kit.difficulty_set.held_out import fit_and_score, halves, labels_of, read_items


def main() -> None:
    items = read_items()
    features = [request_features([{"role": "user", "content": i["prompt"]}]) for i in items]
    labels = labels_of(items)
    vectors = SentenceEncoder().encode([i["prompt"] for i in items])
    hand = {prompt for _, _, prompt in HANDWRITTEN}
    splits = {
        "held-out half 0": halves(items),
        "held-out half 1": tuple(reversed(halves(items))),
        "templated -> hand-written": (
            [n for n, i in enumerate(items) if i["prompt"] not in hand],
            [n for n, i in enumerate(items) if i["prompt"] in hand],
        ),
    }
    for name, (train, test) in splits.items():
        base = fit_and_score(features, labels, list(train), list(test))
        truth = [labels[i] for i in test]
        row = [f"{name}: logistic {roc_auc(base, truth):.3f}"]
        for weight in (0.2, 0.3, 0.5, 1.0):
            knn = KnnVote.build(vectors[list(train)], [labels[i] for i in train], weight=weight)
            blended = [knn.blend(s, vectors[i]) for s, i in zip(base, test, strict=True)]
            row.append(f"w={weight}: {roc_auc(blended, truth):.3f}")
        print("  ".join(row))
