"""Held-out evaluation of the difficulty score on the written set.

``halves`` splits the set into two stratified halves (rows alternate within each (domain, label)
cell, so both are balanced); ``fit_and_score`` fits the logistic weights
(``gateway.classify.fitting.weights_fit.fit_logistic``) on the training rows alone and scores
the test rows with them. ``DATA`` is the committed set, ``read_items`` reads it.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from gateway.classify import Features
from gateway.classify.difficulty import score_difficulty, weights_from
from gateway.classify.fitting.weights_fit import fit_logistic

DATA = Path(__file__).resolve().parents[3] / "tests" / "data" / "difficulty_eval.jsonl"
Item = dict[str, str]


def read_items(path: Path = DATA) -> list[Item]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def labels_of(items: list[Item]) -> list[int]:
    return [1 if i["label"] == "hard" else 0 for i in items]


def fit_and_score(
    features: list[Features], labels: list[int], train: list[int], test: list[int]
) -> list[float]:
    bias, vector = fit_logistic([features[i].values() for i in train], [labels[i] for i in train])
    weights = weights_from(bias, vector)
    return [score_difficulty(features[i], weights).score for i in test]


def halves(items: list[Item]) -> tuple[list[int], list[int]]:
    """Alternate rows within each (domain, label) cell, so both halves are balanced."""
    seen: Counter[tuple[str, str]] = Counter()
    first: list[int] = []
    second: list[int] = []
    for index, item in enumerate(items):
        cell = (item["domain"], item["label"])
        (first if seen[cell] % 2 == 0 else second).append(index)
        seen[cell] += 1
    return first, second
