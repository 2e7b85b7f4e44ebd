"""Retry-After from the estimated drain time."""

from __future__ import annotations

import math

import pytest

from gateway.admission.retry_after import retry_after_header, retry_after_s

# id -> (estimated wait, kwargs, expected seconds)
CASES: dict[str, tuple[float | None, dict[str, float], float]] = {
    "unknown: the floor": (None, {}, 1.0),
    "nan: the floor": (math.nan, {}, 1.0),
    "follows the estimate": (7.5, {}, 7.5),
    "short waits are floored": (0.2, {}, 1.0),
    "no wait is floored": (0.0, {}, 1.0),
    "long waits are capped": (600.0, {}, 120.0),
    "infinite wait is capped": (math.inf, {}, 120.0),
    "custom floor": (1.5, {"floor_s": 2.0}, 2.0),
    "custom floor when unknown": (None, {"floor_s": 3.0}, 3.0),
    "custom cap": (45.0, {"cap_s": 30.0}, 30.0),
    "floor equal to cap": (45.0, {"floor_s": 5.0, "cap_s": 5.0}, 5.0),
}


@pytest.mark.parametrize(("wait", "kwargs", "expected"), CASES.values(), ids=CASES.keys())
def test_retry_after_s(wait: float | None, kwargs: dict[str, float], expected: float) -> None:
    assert retry_after_s(wait, **kwargs) == expected


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"floor_s": 0.0}, "floor_s"),
        ({"floor_s": -1.0}, "floor_s"),
        ({"floor_s": math.nan}, "floor_s"),
        ({"floor_s": math.inf}, "floor_s"),
        ({"cap_s": 0.5}, "cap_s"),
        ({"cap_s": math.inf}, "cap_s"),
        ({"cap_s": math.nan}, "cap_s"),
    ],
)
def test_invalid_bounds(kwargs: dict[str, float], field: str) -> None:
    with pytest.raises(ValueError, match=f"^{field} must"):
        retry_after_s(5.0, **kwargs)


@pytest.mark.parametrize(
    ("seconds", "header"),
    [(1.0, "1"), (1.01, "2"), (7.5, "8"), (120.0, "120"), (0.2, "1"), (0.0, "1")],
)
def test_retry_after_header_rounds_up_to_whole_seconds(seconds: float, header: str) -> None:
    assert retry_after_header(seconds) == header


def test_retry_after_header_refuses_nan() -> None:
    with pytest.raises(ValueError, match=r"^seconds must"):
        retry_after_header(math.nan)
