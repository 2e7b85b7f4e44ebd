"""RetryBudget: tables of requests, retries and clock advances, plus long-run properties."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.retry_budget import BUCKETS, RetryBudget, RetryBudgetSettings


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def make(**settings: Any) -> tuple[RetryBudget, FakeClock]:
    clock = FakeClock()
    return RetryBudget(RetryBudgetSettings(**settings), clock), clock


# Steps: "R" on_request, "Y" try_spend granted, "N" try_spend refused, "+x" advance the clock
# x seconds, "=a/b" stats() == (a, b). "R*10" repeats a step. The clock starts at 1000.0 and
# the default window of 10 s has buckets of 1 s.
NO_FLOOR = {"ratio": 0.1, "min_retries_per_s": 0.0}
HALF = {"ratio": 0.5, "min_retries_per_s": 0.0}

# id -> (settings, steps)
SEQUENCES: dict[str, tuple[dict[str, Any], str]] = {
    "no traffic and no floor: no retry": (NO_FLOOR, "N =0/0"),
    "floor alone allows min_retries_per_s * window_s": ({}, "Y*5 N =0/5"),
    "ratio of requests": (NO_FLOOR, "R*10 Y N =10/1"),
    "below one allowed retry": (NO_FLOOR, "R*9 N =9/0"),
    "ratio grows with traffic": (NO_FLOOR, "R*25 Y Y N R*5 Y N =30/3"),
    "ratio and floor add up": ({"ratio": 0.5, "min_retries_per_s": 0.2}, "R*4 Y*4 N =4/4"),
    "fractional floor rounds down": ({"ratio": 0.0, "min_retries_per_s": 0.15}, "Y N"),
    "fractional floor adds to ratio": ({"ratio": 0.1, "min_retries_per_s": 0.05}, "N R*5 Y N"),
    "ratio zero leaves only the floor": ({"ratio": 0.0}, "R*1000 Y*5 N"),
    "ratio one: a retry per request": ({"ratio": 1.0, "min_retries_per_s": 0.0}, "R*3 Y*3 N"),
    "float error does not cost a retry": (
        {"ratio": 0.29, "min_retries_per_s": 0.0},
        "R*100 Y*29 N",
    ),
    "refused retries are not recorded": (NO_FLOOR, "R*10 Y N N N =10/1"),
    "retries spent earlier in the window count": (HALF, "R*4 Y +3 R*2 Y Y N +3 N =6/3"),
    "everything expires after a window": (HALF, "R*4 Y Y N +10 =0/0 N R*2 Y N =2/1"),
    "long idle clears everything": (HALF, "R*4 Y Y +1000 =0/0 N"),
    "old buckets expire one by one": (
        HALF,
        "R*4 +5 R*4 =8/0 Y*4 N +5 =4/4 N R*2 N +5 =2/0 Y N +5 =0/1 N +5 =0/0",
    ),
    "window holds ten buckets": (HALF, "R*10 +9.75 =10/0 +0.25 =0/0"),
    "a bucket expires whole": (HALF, "+0.5 R*2 +9.25 =2/0 +0.25 =0/0"),
    "expired retries free the budget": (
        {"ratio": 0.0, "min_retries_per_s": 0.1},
        "Y N +9 N +1 Y N",
    ),
    "short window": (
        {"ratio": 0.5, "window_s": 2.5, "min_retries_per_s": 0.0},
        "R*2 Y N +2.25 N +0.25 =0/0 N",
    ),
}


def _expand(steps: str) -> list[str]:
    expanded = []
    for token in steps.split():
        step, _, times = token.partition("*")
        expanded.extend([step] * int(times or 1))
    return expanded


@pytest.mark.parametrize(("settings", "steps"), SEQUENCES.values(), ids=SEQUENCES.keys())
def test_sequence(settings: dict[str, Any], steps: str) -> None:
    budget, clock = make(**settings)
    for number, step in enumerate(_expand(steps)):
        where = f"step {number} ({step})"
        if step == "R":
            budget.on_request()
        elif step in ("Y", "N"):
            assert budget.try_spend() is (step == "Y"), where
        elif step.startswith("+"):
            clock.now += float(step[1:])
        elif step.startswith("="):
            requests, retries = step[1:].split("/")
            assert budget.stats() == (int(requests), int(retries)), where
        else:
            raise AssertionError(f"bad step {step!r}")


def test_clock_stepping_back_counts_into_the_current_bucket() -> None:
    budget, clock = make(**HALF)
    clock.now += 5.0
    budget.on_request()
    clock.now -= 3.0
    budget.on_request()
    assert budget.try_spend()
    assert budget.stats() == (2, 1)
    clock.now += 3.0 + 9.0  # the bucket of t=1005 is still in the window
    assert budget.stats() == (2, 1)
    clock.now += 1.0
    assert budget.stats() == (0, 0)


def test_defaults() -> None:
    assert RetryBudgetSettings() == RetryBudgetSettings(
        ratio=0.1, window_s=10.0, min_retries_per_s=0.5
    )


# id -> (settings, the field the error names)
INVALID: dict[str, tuple[dict[str, Any], str]] = {
    "negative ratio": ({"ratio": -0.1}, "ratio"),
    "ratio above one": ({"ratio": 1.5}, "ratio"),
    "nan ratio": ({"ratio": math.nan}, "ratio"),
    "zero window": ({"window_s": 0.0}, "window_s"),
    "negative window": ({"window_s": -10.0}, "window_s"),
    "infinite window": ({"window_s": math.inf}, "window_s"),
    "nan window": ({"window_s": math.nan}, "window_s"),
    "negative floor": ({"min_retries_per_s": -0.5}, "min_retries_per_s"),
    "infinite floor": ({"min_retries_per_s": math.inf}, "min_retries_per_s"),
    "nan floor": ({"min_retries_per_s": math.nan}, "min_retries_per_s"),
}


@pytest.mark.parametrize(("kwargs", "field"), INVALID.values(), ids=INVALID.keys())
def test_invalid_settings(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=f"^{field} must"):
        RetryBudgetSettings(**kwargs)


# -- long-run properties ------------------------------------------------------------------

# Windows whose buckets, and clock steps, are exact binary fractions, so the properties can
# compare times without rounding slack. A clock step is a number of quarter buckets: mostly
# within the window, sometimes past it.
WINDOWS = st.sampled_from([2.5, 5.0, 10.0, 20.0])
STEP = st.one_of(
    st.just("R"),
    st.just("T"),
    st.integers(min_value=1, max_value=4 * BUCKETS + 8),
)


@given(
    ratio=st.floats(min_value=0.0, max_value=1.0),
    window_s=WINDOWS,
    floor_per_s=st.sampled_from([0.0, 0.1, 0.5, 1.0]),
    steps=st.lists(STEP, max_size=300),
)
def test_grants_never_exceed_ratio_of_recent_requests_plus_floor(
    ratio: float, window_s: float, floor_per_s: float, steps: list[str | int]
) -> None:
    settings = RetryBudgetSettings(ratio=ratio, window_s=window_s, min_retries_per_s=floor_per_s)
    clock = FakeClock()
    budget = RetryBudget(settings, clock)
    floor = floor_per_s * window_s
    bucket_s = window_s / BUCKETS
    requests: list[float] = []
    grants: list[float] = []
    for step in steps:
        now = clock.now
        if step == "R":
            budget.on_request()
            requests.append(now)
        elif step == "T":
            if budget.try_spend():
                grants.append(now)
                # Whatever the bucketing, retries granted over the last (BUCKETS-1) buckets'
                # worth of time are bounded by the requests of the last full window.
                recent_grants = sum(1 for t in grants if t >= now - window_s + bucket_s)
                recent_requests = sum(1 for t in requests if t > now - window_s)
                assert recent_grants <= ratio * recent_requests + floor + 1e-6
        else:
            assert isinstance(step, int)
            clock.now += step * bucket_s / 4


@given(
    ratio=st.floats(min_value=0.0, max_value=1.0),
    window_s=WINDOWS,
    floor_per_s=st.sampled_from([0.0, 0.1, 0.5, 1.0]),
    steps=st.lists(STEP, max_size=300),
)
def test_stats_count_the_last_ten_buckets_and_decisions_follow_them(
    ratio: float, window_s: float, floor_per_s: float, steps: list[str | int]
) -> None:
    settings = RetryBudgetSettings(ratio=ratio, window_s=window_s, min_retries_per_s=floor_per_s)
    clock = FakeClock()
    budget = RetryBudget(settings, clock)
    allowance_floor = floor_per_s * window_s
    bucket_s = window_s / BUCKETS
    requests: list[float] = []
    grants: list[float] = []

    def expected_stats() -> tuple[int, int]:
        oldest = math.floor(clock.now / bucket_s) - BUCKETS + 1
        return (
            sum(1 for t in requests if math.floor(t / bucket_s) >= oldest),
            sum(1 for t in grants if math.floor(t / bucket_s) >= oldest),
        )

    for step in steps:
        if step == "R":
            budget.on_request()
            requests.append(clock.now)
        elif step == "T":
            in_window, retried = expected_stats()
            granted = budget.try_spend()
            fits = retried + 1 <= ratio * in_window + allowance_floor
            # Exact unless within float noise of the boundary.
            if abs(retried + 1 - (ratio * in_window + allowance_floor)) > 1e-6:
                assert granted is fits
            if granted:
                grants.append(clock.now)
        else:
            assert isinstance(step, int)
            clock.now += step * bucket_s / 4
        assert budget.stats() == expected_stats()
