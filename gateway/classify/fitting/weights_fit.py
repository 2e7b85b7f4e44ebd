"""Offline fitting of the heuristic's difficulty weights (``DifficultyWeights``).

Algorithm: L2-regularised logistic regression (``logistic.fit``: Newton's method on the
penalised log-likelihood, the bias not penalised) over the ten cheap features of each
labelled prompt, on raw (unscaled) feature values so the penalty matches the published
weights. Parameters: ``l2`` (default 1.0), ``max_steps`` (50) and ``tolerance`` on the
largest step (1e-9). With a few hundred rows and ten columns a fit takes milliseconds, so
tests can re-fit freely.

Run ``python -m gateway.classify.fitting.weights_fit tests/data/difficulty_eval.jsonl`` to print
weights fitted on a labelled JSON-lines file (``prompt``, ``label`` easy|hard), for
``DifficultyWeights``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from gateway.classify.classifier import request_features
from gateway.classify.features import FEATURE_NAMES
from gateway.classify.fitting import logistic

Row = Sequence[float]


def fit_logistic(
    rows: Sequence[Row],
    labels: Sequence[int],
    *,
    l2: float = 1.0,
    max_steps: int = 50,
    tolerance: float = 1e-9,
) -> tuple[float, tuple[float, ...]]:
    """Fit ``(bias, weights)`` so that ``sigmoid(bias + w . x)`` predicts ``labels`` (0/1)."""
    if not rows or len(rows) != len(labels):
        raise ValueError("need as many labels as rows, and at least one row")
    fitted = logistic.fit(
        np.asarray(rows, dtype=np.float64),
        np.asarray(labels, dtype=np.float64),
        l2=l2,
        max_steps=max_steps,
        tolerance=tolerance,
    )
    return fitted.bias, tuple(float(w) for w in fitted.weights)


def main(argv: Sequence[str]) -> None:
    """Print the weights fitted on a labelled JSON-lines file (offline tool)."""
    lines = Path(argv[0]).read_text(encoding="utf-8").splitlines()
    items = [json.loads(line) for line in lines if line.strip()]
    rows = [request_features([{"role": "user", "content": i["prompt"]}]).values() for i in items]
    labels = [1 if i["label"] == "hard" else 0 for i in items]
    bias, weights = fit_logistic(rows, labels)
    print(f"bias: {bias:.2f}")
    for name, weight in zip(FEATURE_NAMES, weights, strict=True):
        print(f"{name}: {weight:.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
