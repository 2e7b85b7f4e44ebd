"""The numpy logistic regression: soft targets, row weights, standardised columns."""

from __future__ import annotations

import numpy as np
import pytest

from gateway.classify.fitting import logistic


def _data(seed: int, n: int = 4000) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = np.column_stack([rng.random(n), 100 * rng.random(n)])  # columns of different scales
    p = 1 / (1 + np.exp(-(-1.0 + 3.0 * x[:, 0] - 0.02 * x[:, 1])))
    return x, p


@pytest.mark.parametrize("standardize", [False, True])
def test_soft_targets_recover_the_generating_weights(standardize: bool) -> None:
    x, p = _data(1)
    fitted = logistic.fit(x, p, l2=1e-6, standardize=standardize)
    assert fitted.bias == pytest.approx(-1.0, abs=1e-3)
    assert fitted.weights == pytest.approx([3.0, -0.02], abs=1e-3)
    assert fitted.predict(x) == pytest.approx(p, abs=1e-4)


def test_row_weights_count_like_repeated_rows() -> None:
    x = np.asarray([[0.0], [1.0], [2.0], [3.0]])
    y = np.asarray([0.0, 0.0, 1.0, 1.0])
    weighted = logistic.fit(x, y, l2=1.0, row_weights=np.asarray([1.0, 3.0, 1.0, 1.0]))
    repeated = logistic.fit(np.r_[x, x[[1, 1]]], np.r_[y, y[[1, 1]]], l2=1.0)
    assert weighted.bias == pytest.approx(repeated.bias)
    assert weighted.weights == pytest.approx(repeated.weights)


def test_constant_targets_and_constant_columns_stay_finite() -> None:
    x = np.column_stack([np.linspace(0, 1, 20), np.ones(20)])
    fitted = logistic.fit(x, np.ones(20), l2=1.0, standardize=True)
    assert np.isfinite(fitted.bias)
    assert fitted.weights[1] == 0.0
    assert np.all(fitted.predict(x) > 0.99)


@pytest.mark.parametrize(
    ("x", "y", "message"),
    [
        (np.zeros((0, 2)), np.zeros(0), "non-empty"),
        (np.zeros((3, 2)), np.zeros(2), "one target per row"),
        (np.zeros((2, 1)), np.asarray([0.0, 1.5]), r"\[0, 1\]"),
    ],
)
def test_input_is_checked(x: np.ndarray, y: np.ndarray, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        logistic.fit(x, y)
