"""The heuristic's logistic regression (fitting.fit_logistic over logistic.fit)."""

from __future__ import annotations

import math
import random

import pytest

from gateway.classify.fitting.weights_fit import fit_logistic


def test_recovers_the_generating_weights() -> None:
    rng = random.Random(1)
    true_bias, true_w = -1.0, (3.0, -2.0)
    rows, labels = [], []
    for _ in range(3000):
        x = (rng.random(), rng.random())
        p = 1 / (1 + math.exp(-(true_bias + true_w[0] * x[0] + true_w[1] * x[1])))
        rows.append(x)
        labels.append(1 if rng.random() < p else 0)
    bias, weights = fit_logistic(rows, labels, l2=1e-6)
    assert bias == pytest.approx(true_bias, abs=0.3)
    assert weights == pytest.approx(true_w, abs=0.4)


def test_penalty_keeps_separable_data_finite_and_zero_columns_at_zero() -> None:
    rows = [(0.0, 0.0), (0.1, 0.0), (0.9, 0.0), (1.0, 0.0)]
    bias, (w, w_zero) = fit_logistic(rows, [0, 0, 1, 1], l2=1.0)
    assert 0 < w < 20
    assert w_zero == 0.0
    assert math.isfinite(bias)


def test_input_is_checked() -> None:
    with pytest.raises(ValueError, match="labels"):
        fit_logistic([(1.0,)], [1, 0])
