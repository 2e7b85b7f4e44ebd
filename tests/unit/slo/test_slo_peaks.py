"""The load of the SLO benchmark's arrivals over sliding windows (``loadtests/slo/peaks.py``)."""

from __future__ import annotations

import pytest

from loadtests.loadgen.request import PlannedRequest
from loadtests.slo.peaks import describe, span_load, windows


def _at(*times: float) -> list[PlannedRequest]:
    return [PlannedRequest(index=i, at_s=t, label="x", model="m", messages=[], max_tokens=1,
                           temperature=0.0) for i, t in enumerate(times)]  # fmt: skip


@pytest.mark.parametrize(
    ("times", "seconds", "drain", "window_s", "expected"),
    [
        # One request of 2 engine-seconds in each 1-s window, a fleet draining 2 a second:
        # 1x throughout (windows start every 0.1 s, the last one past the last arrival).
        ((0.05, 1.05, 2.05), (2.0, 2.0, 2.0), 2.0, 1.0, [1.0] * 12),
        # A clump: two requests in the first window, one in the next five, then none.
        ((0.05, 0.55, 2.05), (1.0, 1.0, 0.0), 1.0, 1.0, [2.0] + [1.0] * 5 + [0.0] * 6),
        ((), (), 1.0, 1.0, []),
    ],
)
def test_windows_slide_by_a_tenth(
    times: tuple[float, ...],
    seconds: tuple[float, ...],
    drain: float,
    window_s: float,
    expected: list[float],
) -> None:
    got = windows(_at(*times), seconds, drain, window_s)
    assert got == pytest.approx(expected)


@pytest.mark.parametrize(
    ("times", "seconds", "expected"),
    [
        ((0.0, 10.0), (5.0, 5.0), 0.5),  # 10 engine-seconds over 10 s of a fleet draining 2/s
        ((3.0, 3.0), (1.0, 1.0), float("inf")),  # all at once: no span
    ],
)
def test_span_load(times: tuple[float, ...], seconds: tuple[float, ...], expected: float) -> None:
    assert span_load(_at(*times), seconds, 2.0) == expected


def test_a_trace_shorter_than_the_window_says_so() -> None:
    assert describe("azure-code 1x", []) == "azure-code 1x: shorter than the window"
    assert describe("b", [0.5, 1.6, 2.5]) == (
        "b: peak 2.50x; windows above 1x 67%, 1.5x 67%, 2x 33%"
    )
