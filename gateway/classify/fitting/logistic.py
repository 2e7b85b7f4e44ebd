"""L2-regularised logistic regression with soft targets, fitted with numpy (offline tool).

Algorithm: Newton's method (iteratively reweighted least squares) on the penalised
cross-entropy ``sum(v_i * (y_i log p_i + (1 - y_i) log(1 - p_i))) - l2/2 * |w|^2`` where
``p_i = sigmoid(b + w . x_i)``, targets ``y_i`` anywhere in [0, 1] (a soft target is an
expected label) and optional row weights ``v_i``; the bias is penalised only by a token
1e-6, so that targets constant over the rows still give a solvable system. Each step
solves ``H d = g`` with ``H = X^T S X + l2 I`` (positive definite with ``l2 > 0``); it stops
when the largest step is below ``tolerance`` or after ``max_steps``.

With ``standardize`` the columns are centred and scaled to unit variance before fitting (so
one penalty suits columns of any scale, such as embedding components next to [0, 1]
features) and the weights are mapped back, so the result always applies to raw columns.
Parameters: ``l2`` (default 1.0), ``max_steps`` (50), ``tolerance`` (1e-9).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[np.float64]
# A token penalty on the bias: targets that are the same on every row (a model that always
# does well) would otherwise send it to infinity and leave the system singular.
_BIAS_L2 = 1e-6


@dataclass(frozen=True, slots=True)
class Fitted:
    bias: float
    weights: Matrix  # one per column, for raw (unscaled) columns

    def logits(self, x: Matrix) -> Matrix:
        return self.bias + np.asarray(x, dtype=np.float64) @ self.weights

    def predict(self, x: Matrix) -> Matrix:
        return sigmoid(self.logits(x))


def sigmoid(z: Matrix) -> Matrix:
    out: Matrix = 0.5 * (1.0 + np.tanh(0.5 * z))  # overflow-free form of 1 / (1 + e^-z)
    return out


def fit(
    x: Matrix,
    y: Matrix,
    *,
    l2: float = 1.0,
    row_weights: Matrix | None = None,
    standardize: bool = False,
    max_steps: int = 50,
    tolerance: float = 1e-9,
) -> Fitted:
    """Fit ``sigmoid(bias + weights . x)`` to the targets ``y`` in [0, 1]."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.ndim != 2 or len(x) == 0 or y.shape != (len(x),):
        raise ValueError("need a non-empty 2-d matrix and one target per row")
    if np.any(y < 0) or np.any(y > 1):
        raise ValueError("targets must lie in [0, 1]")
    v = np.ones(len(x)) if row_weights is None else np.asarray(row_weights, dtype=np.float64)
    mean, scale = _scaling(x) if standardize else (np.zeros(x.shape[1]), np.ones(x.shape[1]))
    design = np.hstack([np.ones((len(x), 1)), (x - mean) / scale])
    penalty = np.full(design.shape[1], l2)
    penalty[0] = _BIAS_L2
    theta = np.zeros(design.shape[1])
    for _ in range(max_steps):
        p = sigmoid(design @ theta)
        gradient = design.T @ (v * (p - y)) + penalty * theta
        hessian = (design * (v * p * (1 - p))[:, None]).T @ design + np.diag(penalty)
        try:
            step = np.linalg.solve(hessian, gradient)
        except np.linalg.LinAlgError as exc:
            raise ValueError("singular system: add an L2 penalty") from exc
        theta -= step
        if np.max(np.abs(step)) < tolerance:
            break
    weights = theta[1:] / scale
    return Fitted(float(theta[0] - weights @ mean), weights)


def _scaling(x: Matrix) -> tuple[Matrix, Matrix]:
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-12] = 1.0  # a constant column stays as it is (and fits to ~0)
    return mean, scale
