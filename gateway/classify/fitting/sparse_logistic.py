"""L2-regularised logistic regression over sparse rows, fitted with L-BFGS in numpy (offline).

For designs too wide for ``logistic.py``'s Newton steps (tens of thousands of word and word
pair columns, a handful present per row). Objective, as there: minimise
``-sum(v_i * (y_i log p_i + (1 - y_i) log(1 - p_i))) + l2/2 * |w|^2`` with
``p_i = sigmoid(b + w . x_i)``, targets ``y_i`` in [0, 1], row weights ``v_i``; the bias is
penalised only by a token 1e-6.

Rows are stored compressed (``SparseRows``: per row, the columns present and their values);
``X w`` and ``X^T r`` are two ``np.bincount`` passes, O(non-zeros). Minimiser: limited-memory
BFGS (Nocedal and Wright, "Numerical Optimization", algorithm 7.4: the two-loop recursion over
the last ``memory`` steps, initial scaling ``s.y / y.y``) with a backtracking line search on
the Armijo condition (sufficient decrease 1e-4, halving the step). It stops when the largest
gradient component is below ``tolerance`` times the total row weight, or after ``max_steps``.
The problem is strictly convex, so the minimum is unique and the result does not depend on
the start. Parameters: ``l2``, ``memory`` (10), ``max_steps`` (2000), ``tolerance`` (1e-7).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from gateway.classify.fitting.logistic import Fitted, sigmoid

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]
_BIAS_L2 = 1e-6
_ARMIJO = 1e-4


@dataclass(frozen=True, eq=False)
class SparseRows:
    """A matrix by rows: row ``i`` has ``values[k]`` in column ``columns[k]`` for ``k`` in
    ``starts[i]:starts[i + 1]``; every other entry is 0."""

    starts: Ints  # length rows + 1
    columns: Ints
    values: Floats
    width: int

    def __post_init__(self) -> None:
        if self.starts[0] != 0 or self.starts[-1] != len(self.columns):
            raise ValueError("starts must run from 0 to the number of entries")
        if len(self.values) != len(self.columns) or np.any(np.diff(self.starts) < 0):
            raise ValueError("need one value per column entry and non-decreasing starts")
        if len(self.columns) and (self.columns.min() < 0 or self.columns.max() >= self.width):
            raise ValueError("a column index is outside the matrix")

    @classmethod
    def of(cls, rows: Sequence[tuple[Sequence[int], Sequence[float]]], width: int) -> SparseRows:
        """From ``(columns, values)`` per row."""
        sizes = [len(c) for c, _ in rows]
        columns = np.fromiter((j for c, _ in rows for j in c), np.int64, sum(sizes))
        values = np.fromiter((x for _, v in rows for x in v), np.float64, sum(sizes))
        return cls(np.r_[0, np.cumsum(sizes, dtype=np.int64)], columns, values, width)

    @property
    def height(self) -> int:
        return len(self.starts) - 1

    def take(self, rows: npt.ArrayLike) -> SparseRows:
        """The given rows, in that order."""
        picked = np.asarray(rows, dtype=np.int64)
        lo, hi = self.starts[picked], self.starts[picked + 1]
        sizes = hi - lo
        # Entry positions: each row's run lo..hi-1, concatenated.
        offsets = np.repeat(lo - np.r_[0, np.cumsum(sizes)[:-1]], sizes)
        positions = np.arange(int(sizes.sum())) + offsets
        starts = np.r_[0, np.cumsum(sizes)]
        return SparseRows(starts, self.columns[positions], self.values[positions], self.width)

    def row_ids(self) -> Ints:
        return np.repeat(np.arange(self.height), np.diff(self.starts))

    def dot(self, w: Floats) -> Floats:
        """``X w``."""
        sums = np.bincount(
            self.row_ids(), weights=self.values * w[self.columns], minlength=self.height
        )
        return np.asarray(sums, dtype=np.float64)


def fit(
    x: SparseRows,
    y: npt.ArrayLike,
    *,
    l2: float,
    row_weights: npt.ArrayLike | None = None,
    memory: int = 10,
    max_steps: int = 2000,
    tolerance: float = 1e-7,
) -> Fitted:
    """Fit ``sigmoid(bias + weights . x)`` to the targets ``y`` in [0, 1]."""
    targets = np.asarray(y, dtype=np.float64)
    if x.height == 0 or targets.shape != (x.height,):
        raise ValueError("need at least one row and one target per row")
    if np.any(targets < 0) or np.any(targets > 1):
        raise ValueError("targets must lie in [0, 1]")
    if l2 <= 0:
        raise ValueError("l2 must be positive")
    v = np.ones(x.height) if row_weights is None else np.asarray(row_weights, dtype=np.float64)
    rows = x.row_ids()
    penalty = np.full(x.width + 1, l2)
    penalty[0] = _BIAS_L2

    def loss(theta: Floats) -> tuple[float, Floats]:
        z = theta[0] + np.bincount(
            rows, weights=x.values * theta[1:][x.columns], minlength=x.height
        )
        # log(1 + e^z) - y z, overflow-free.
        nll = _dot(v, np.logaddexp(0.0, z) - targets * z)
        r = v * (sigmoid(z) - targets)
        grad = np.empty_like(theta)
        grad[0] = r.sum()
        grad[1:] = np.bincount(x.columns, weights=x.values * r[rows], minlength=x.width)
        grad += penalty * theta
        return nll + 0.5 * _dot(penalty, theta * theta), grad

    theta = lbfgs(loss, np.zeros(x.width + 1), memory, max_steps, tolerance * float(v.sum()))
    return Fitted(float(theta[0]), theta[1:])


def lbfgs(
    loss: Callable[[Floats], tuple[float, Floats]],
    start: Floats,
    memory: int,
    max_steps: int,
    gradient_tolerance: float,
) -> Floats:
    """The minimiser of a smooth convex ``loss`` (value, gradient), from ``start``."""
    theta = start
    value, grad = loss(theta)
    history: deque[tuple[Floats, Floats, float]] = deque(maxlen=memory)
    for _ in range(max_steps):
        if np.max(np.abs(grad)) < gradient_tolerance:
            break
        direction = -_inverse_hessian_times(grad, history)
        slope = _dot(grad, direction)
        if slope >= 0:  # not a descent direction: restart from the gradient
            history.clear()
            direction, slope = -grad, -_dot(grad, grad)
        step = 1.0 if history else 1.0 / max(1.0, float(np.max(np.abs(grad))))
        while True:
            candidate = theta + step * direction
            new_value, new_grad = loss(candidate)
            if new_value <= value + _ARMIJO * step * slope:
                break
            step *= 0.5
            if step < 1e-20:
                return theta  # no decrease left at machine precision
        s, change = candidate - theta, new_grad - grad
        curvature = _dot(s, change)
        if curvature > 1e-12:
            history.append((s, change, 1.0 / curvature))
        theta, value, grad = candidate, new_value, new_grad
    return theta


def _inverse_hessian_times(grad: Floats, history: deque[tuple[Floats, Floats, float]]) -> Floats:
    """The two-loop recursion: the L-BFGS inverse Hessian estimate times ``grad``."""
    q = grad.copy()
    alphas = []
    for s, change, rho in reversed(history):
        alpha = rho * _dot(s, q)
        q -= alpha * change
        alphas.append(alpha)
    if history:
        s, change, _ = history[-1]
        q *= _dot(s, change) / _dot(change, change)
    for (s, change, rho), alpha in zip(history, reversed(alphas), strict=True):
        beta = rho * _dot(change, q)
        q += (alpha - beta) * s
    return q


def _dot(a: Floats, b: Floats) -> float:
    # Not ``a @ b``: BLAS may spread a long dot product over threads, which on a busy machine
    # costs a hundred times the arithmetic.
    return float(np.multiply(a, b).sum())
