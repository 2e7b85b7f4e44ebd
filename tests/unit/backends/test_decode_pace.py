"""A backend's streaming pace: the 95th percentile of its recent streams' seconds per token."""

from __future__ import annotations

import math

import pytest

from gateway.backends.decode_pace import DecodePace


@pytest.mark.parametrize(
    ("paces", "upper"),
    [
        ([], None),
        ([0.02] * 7, None),  # fewer than 8 streams: no bound yet
        ([0.02] * 8, 0.02),
        ([0.01 * i for i in range(1, 21)], 0.19),  # 20 paces: the 19th
        ([0.02] * 60 + [0.5] * 4, 0.5),  # one stream in 16 that slow: within the bound
        ([0.5] * 4 + [0.02] * 64, 0.02),  # only the last 64 count
        ([0.02] * 8 + [math.nan, -1.0, math.inf], 0.02),  # nonsense is ignored
    ],
)
def test_upper(paces: list[float], upper: float | None) -> None:
    pace = DecodePace()
    for p in paces:
        pace.observe(p)
    assert pace.upper() == (None if upper is None else pytest.approx(upper))


@pytest.mark.parametrize(("window", "least"), [(0, 1), (8, 0), (8, 9)])
def test_bad_parameters(window: int, least: int) -> None:
    with pytest.raises(ValueError, match="min_samples"):
        DecodePace(window=window, min_samples=least)
