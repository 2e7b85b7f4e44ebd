"""Whole numbers as JSON Schema counts them."""

from __future__ import annotations

import math

import pytest

from gateway.openai.numbers import whole_number

CASES: list[tuple[object, int | None]] = [
    (7, 7),
    (-3, -3),
    (0, 0),
    (7.0, 7),
    (186902.0, 186902),
    (-2.0, -2),
    (4.474239041317904e19, 44742390413179043840),  # orjson's reading of a huge integer
    (7.5, None),
    (math.inf, None),
    (math.nan, None),
    (True, None),
    (False, None),
    ("7", None),
    (None, None),
    ([7], None),
]


@pytest.mark.parametrize(("value", "whole"), CASES)
def test_whole_number(value: object, whole: int | None) -> None:
    assert whole_number(value) == whole
