from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loadtests.loadgen.stats import percentile, percentile_table, ratio


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [
        ([5.0], 50, 5.0),
        ([5.0], 99, 5.0),
        ([1.0, 2.0], 50, 1.5),
        ([1.0, 2.0, 3.0, 4.0], 0, 1.0),
        ([1.0, 2.0, 3.0, 4.0], 100, 4.0),
        ([1.0, 2.0, 3.0, 4.0], 50, 2.5),
        ([4.0, 1.0, 3.0, 2.0], 25, 1.75),
        (list(map(float, range(1, 101))), 99, 99.01),
        (list(map(float, range(1, 101))), 95, 95.05),
    ],
)
def test_percentile_table_of_cases(values: list[float], q: float, expected: float) -> None:
    assert percentile(values, q) == pytest.approx(expected)


def test_empty_is_none() -> None:
    assert percentile([], 50) is None
    table = percentile_table([])
    assert table == {"p50": None, "p95": None, "p99": None, "mean": None, "count": 0.0}


def test_out_of_range_rejected() -> None:
    with pytest.raises(ValueError, match="range"):
        percentile([1.0], 101)


def test_table_keys() -> None:
    table = percentile_table([1.0, 2.0, 3.0])
    assert table["p50"] == 2.0
    assert table["mean"] == 2.0
    assert table["count"] == 3.0


@given(st.lists(st.floats(-1e6, 1e6), min_size=1), st.floats(0, 100), st.floats(0, 100))
def test_monotone_and_bounded(values: list[float], q1: float, q2: float) -> None:
    low, high = sorted((q1, q2))
    p_low, p_high = percentile(values, low), percentile(values, high)
    assert p_low is not None
    assert p_high is not None
    assert min(values) <= p_low <= p_high + 1e-9 * max(1.0, abs(p_high))
    assert p_high <= max(values)


def test_ratio() -> None:
    assert ratio(2.0, 4.0) == 0.5
    assert ratio(None, 1.0) is None
    assert ratio(0.0, 0.0) is None
    assert ratio(1.0, 0.0) == math.inf
