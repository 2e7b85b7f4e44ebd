"""Offline fitting of the difficulty weights: L2-regularised logistic regression, pure Python.

Algorithm: Newton's method (iteratively reweighted least squares) on the penalised
log-likelihood ``sum(y log p + (1 - y) log(1 - p)) - l2/2 * |w|^2`` (the bias is not
penalised). Each step solves ``H d = g`` with Gaussian elimination (partial pivoting);
``H = X^T S X + l2 I`` is positive definite, so a few steps converge. Parameters: ``l2``
(default 1.0), ``max_steps`` (50) and ``tolerance`` on the largest step (1e-9). With a few
hundred rows and ten columns a fit takes milliseconds, so tests can re-fit freely.

Run ``python -m gateway.classify.fitting tests/data/difficulty_eval.jsonl`` to print weights
fitted on a labelled JSON-lines file (``prompt``, ``label`` easy|hard), for
``DifficultyWeights``.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path

from gateway.classify.classifier import request_features
from gateway.classify.features import FEATURE_NAMES

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
    width = len(rows[0]) + 1
    theta = [0.0] * width
    for _ in range(max_steps):
        gradient, hessian = _derivatives(rows, labels, theta, l2)
        step = _solve(hessian, gradient)
        theta = [t - s for t, s in zip(theta, step, strict=True)]
        if max(abs(s) for s in step) < tolerance:
            break
    return theta[0], tuple(theta[1:])


def _derivatives(
    rows: Sequence[Row], labels: Sequence[int], theta: list[float], l2: float
) -> tuple[list[float], list[list[float]]]:
    """Gradient and Hessian of the negative penalised log-likelihood at ``theta``."""
    width = len(theta)
    gradient = [0.0] + [l2 * t for t in theta[1:]]
    hessian = [[0.0] * width for _ in range(width)]
    for i in range(1, width):
        hessian[i][i] = l2
    for row, label in zip(rows, labels, strict=True):
        x = (1.0, *row)
        p = 1.0 / (1.0 + math.exp(-sum(t * v for t, v in zip(theta, x, strict=True))))
        for i in range(width):
            gradient[i] += (p - label) * x[i]
            for j in range(width):
                hessian[i][j] += p * (1.0 - p) * x[i] * x[j]
    return gradient, hessian


def _solve(matrix: list[list[float]], vector: list[float]) -> list[float]:
    """Solve ``matrix @ out = vector`` by Gaussian elimination with partial pivoting."""
    n = len(vector)
    a = [[*row, value] for row, value in zip(matrix, vector, strict=True)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(a[r][col]))
        if abs(a[pivot][col]) < 1e-12:
            raise ValueError("singular system: add an L2 penalty")
        a[col], a[pivot] = a[pivot], a[col]
        for r in range(col + 1, n):
            factor = a[r][col] / a[col][col]
            for c in range(col, n + 1):
                a[r][c] -= factor * a[col][c]
    out = [0.0] * n
    for r in range(n - 1, -1, -1):
        out[r] = (a[r][n] - sum(a[r][c] * out[c] for c in range(r + 1, n))) / a[r][r]
    return out


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
