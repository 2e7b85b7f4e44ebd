"""L-BFGS logistic regression over sparse rows: the same fit as the dense Newton solver."""

from __future__ import annotations

import numpy as np
import pytest

from gateway.classify.fitting import logistic, sparse_logistic
from gateway.classify.fitting.sparse_logistic import SparseRows


def _sparse(dense: np.ndarray) -> SparseRows:
    rows = [(np.flatnonzero(r).tolist(), r[r != 0].tolist()) for r in dense]
    return SparseRows.of(rows, dense.shape[1])


def _problem(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = (rng.random((600, 12)) < 0.2) * rng.random((600, 12))  # mostly zeros
    return x, rng.random(600), 0.5 + rng.random(600)


@pytest.mark.parametrize(("seed", "l2"), [(0, 0.1), (1, 1.0), (2, 30.0)])
def test_the_fit_matches_newtons_on_the_same_rows(seed: int, l2: float) -> None:
    x, y, weights = _problem(seed)
    dense = logistic.fit(x, y, l2=l2, row_weights=weights)
    fitted = sparse_logistic.fit(_sparse(x), y, l2=l2, row_weights=weights)
    assert fitted.bias == pytest.approx(dense.bias, abs=1e-5)
    assert fitted.weights == pytest.approx(dense.weights, abs=1e-5)


def test_rows_can_be_taken_in_any_order_and_empty_rows_count() -> None:
    x = np.asarray([[0.0, 2.0, 0.0], [0.0, 0.0, 0.0], [1.0, 0.0, 3.0]])
    rows = _sparse(x)
    picked = rows.take([2, 1, 0, 2])
    w = np.asarray([1.0, 10.0, 100.0])
    assert picked.dot(w).tolist() == (x[[2, 1, 0, 2]] @ w).tolist()
    assert picked.height == 4


@pytest.mark.parametrize(
    ("starts", "columns", "message"),
    [
        ([0, 2], [0], "from 0 to the number of entries"),
        ([0, 2, 1], [0], "non-decreasing starts"),
        ([0, 1], [5], "outside the matrix"),
    ],
)
def test_malformed_rows_are_refused(starts: list[int], columns: list[int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SparseRows(np.asarray(starts), np.asarray(columns), np.ones(len(columns)), width=3)


@pytest.mark.parametrize(
    ("y", "l2", "message"),
    [
        ([0.5], 1.0, "one target per row"),
        ([0.5, 1.5], 1.0, r"\[0, 1\]"),
        ([0.5, 0.5], 0.0, "positive"),
    ],
)
def test_input_is_checked(y: list[float], l2: float, message: str) -> None:
    rows = SparseRows.of([([0], [1.0]), ([1], [1.0])], 2)
    with pytest.raises(ValueError, match=message):
        sparse_logistic.fit(rows, y, l2=l2)
