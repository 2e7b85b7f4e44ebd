"""Stage marks to sequential intervals."""

from __future__ import annotations

import pytest

from gateway.tracing.marks import StageMarks, intervals

CASES = {
    "none": (10.0, [], []),
    "sequential": (
        10.0,
        [("rewrite", 10.1), ("plan", 10.3), ("admit", 11.0)],
        [("rewrite", 10.0, 10.1), ("plan", 10.1, 10.3), ("admit", 10.3, 11.0)],
    ),
    "clock stepped back": (
        10.0,
        [("a", 10.5), ("b", 10.2), ("c", 10.6)],
        [("a", 10.0, 10.5), ("b", 10.5, 10.5), ("c", 10.5, 10.6)],
    ),
}


@pytest.mark.parametrize(("arrival", "ends", "want"), CASES.values(), ids=CASES)
def test_intervals(
    arrival: float, ends: list[tuple[str, float]], want: list[tuple[str, float, float]]
) -> None:
    assert intervals(arrival, ends) == want


def test_marks_append_in_order() -> None:
    marks = StageMarks()
    marks.mark("rewrite", 1.0)
    marks.mark("plan", 2.0)
    assert marks.ends == [("rewrite", 1.0), ("plan", 2.0)]
