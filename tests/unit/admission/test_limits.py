"""Concurrency limits: tables of samples -> limits, plus convergence and bounds properties."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.admission.limits import (
    AimdLimit,
    AimdSettings,
    GradientLimit,
    GradientSettings,
    LimitAlgorithm,
    StaticLimit,
)

# A sample: (latency_s, inflight, dropped).
Sample = tuple[float, int, bool]
OK = (0.5, 100, False)  # fast, the limit fully used
SLOW = (2.0, 100, False)  # slower than the default 1 s target
DROP = (0.1, 100, True)
IDLE = (0.5, 1, False)  # fast, but the pool was barely used


def run(algorithm: LimitAlgorithm, samples: list[Sample]) -> list[int]:
    limits = []
    for latency_s, inflight, dropped in samples:
        algorithm.on_sample(latency_s=latency_s, inflight=inflight, dropped=dropped)
        limits.append(algorithm.limit)
    return limits


# -- static -------------------------------------------------------------------------------


@pytest.mark.parametrize("samples", [[OK] * 5, [SLOW, DROP, IDLE], [(math.nan, 0, True)]])
def test_static_limit_never_changes(samples: list[Sample]) -> None:
    assert run(StaticLimit(7), samples) == [7] * len(samples)


@pytest.mark.parametrize("limit", [0, -1])
def test_static_limit_must_be_positive(limit: int) -> None:
    with pytest.raises(ValueError, match=r"^limit must"):
        StaticLimit(limit)


# -- AIMD ---------------------------------------------------------------------------------

# id -> (settings, samples, limits after each sample)
AIMD: dict[str, tuple[dict[str, Any], list[Sample], list[int]]] = {
    "fast and used: +1 per sample": ({"initial": 10}, [OK] * 3, [11, 12, 13]),
    "slow: x0.9 floored": ({"initial": 10}, [SLOW] * 3, [9, 8, 7]),
    "dropped: backs off even when fast": ({"initial": 10}, [DROP], [9]),
    "latency equal to target is fine": ({"initial": 10}, [(1.0, 10, False)], [11]),
    "idle pool does not grow": ({"initial": 10}, [IDLE] * 3, [10, 10, 10]),
    "half used grows": ({"initial": 10}, [(0.5, 5, False)], [11]),
    "just under half does not grow": ({"initial": 10}, [(0.5, 4, False)], [10]),
    "idle pool still backs off when slow": ({"initial": 10}, [(2.0, 1, False)], [9]),
    "clamped to max": ({"initial": 9, "max_limit": 10}, [OK] * 3, [10, 10, 10]),
    "clamped to min": ({"initial": 3, "min_limit": 2}, [SLOW] * 3, [2, 2, 2]),
    "floor of one": ({"initial": 1}, [SLOW], [1]),
    "custom increase": ({"initial": 10, "increase": 5}, [OK, OK], [15, 20]),
    "custom backoff": ({"initial": 100, "backoff_ratio": 0.5}, [SLOW, SLOW, OK], [50, 25, 26]),
    "float error does not cost a step": ({"initial": 30, "backoff_ratio": 0.7}, [SLOW], [21]),
    "custom target": ({"initial": 10, "target_s": 0.25}, [OK, (0.25, 9, False)], [9, 10]),
    "saw-tooth": ({"initial": 10}, [OK, OK, SLOW, OK, DROP], [11, 12, 10, 11, 9]),
    "infinite latency is slow": ({"initial": 10}, [(math.inf, 100, False)], [9]),
    "nan latency is ignored": ({"initial": 10}, [(math.nan, 100, False)], [10]),
    "negative latency is ignored": ({"initial": 10}, [(-1.0, 100, False)], [10]),
    "nan latency but dropped backs off": ({"initial": 10}, [(math.nan, 100, True)], [9]),
}


@pytest.mark.parametrize(("settings", "samples", "limits"), AIMD.values(), ids=AIMD.keys())
def test_aimd_sequence(settings: dict[str, Any], samples: list[Sample], limits: list[int]) -> None:
    assert run(AimdLimit(AimdSettings(**settings)), samples) == limits


def test_aimd_defaults() -> None:
    assert AimdSettings(initial=5) == AimdSettings(
        initial=5, min_limit=1, max_limit=1000, target_s=1.0, backoff_ratio=0.9, increase=1
    )


# id -> (settings, the field the error names)
AIMD_INVALID: dict[str, tuple[dict[str, Any], str]] = {
    "zero min": ({"initial": 5, "min_limit": 0}, "min_limit"),
    "max below min": ({"initial": 5, "min_limit": 5, "max_limit": 4}, "max_limit"),
    "initial below min": ({"initial": 1, "min_limit": 2}, "initial"),
    "initial above max": ({"initial": 11, "max_limit": 10}, "initial"),
    "zero target": ({"initial": 5, "target_s": 0.0}, "target_s"),
    "infinite target": ({"initial": 5, "target_s": math.inf}, "target_s"),
    "nan target": ({"initial": 5, "target_s": math.nan}, "target_s"),
    "backoff of one": ({"initial": 5, "backoff_ratio": 1.0}, "backoff_ratio"),
    "backoff of zero": ({"initial": 5, "backoff_ratio": 0.0}, "backoff_ratio"),
    "nan backoff": ({"initial": 5, "backoff_ratio": math.nan}, "backoff_ratio"),
    "zero increase": ({"initial": 5, "increase": 0}, "increase"),
}


@pytest.mark.parametrize(("kwargs", "field"), AIMD_INVALID.values(), ids=AIMD_INVALID.keys())
def test_aimd_invalid_settings(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=f"^{field} must"):
        AimdSettings(**kwargs)


BOUNDS = st.tuples(
    st.integers(min_value=1, max_value=50), st.integers(min_value=0, max_value=200)
).map(lambda pair: (pair[0], pair[0] + pair[1]))


@given(
    bounds=BOUNDS,
    start=st.floats(min_value=0.0, max_value=1.0),
    latency_s=st.floats(min_value=0.0, max_value=1.0),
    backoff_ratio=st.floats(min_value=0.01, max_value=0.99),
    increase=st.integers(min_value=1, max_value=10),
)
def test_aimd_rises_to_max_while_latency_meets_target(
    bounds: tuple[int, int], start: float, latency_s: float, backoff_ratio: float, increase: int
) -> None:
    low, high = bounds
    initial = low + round(start * (high - low))
    limiter = AimdLimit(
        AimdSettings(
            initial=initial,
            min_limit=low,
            max_limit=high,
            backoff_ratio=backoff_ratio,
            increase=increase,
        )
    )
    previous = limiter.limit
    for _ in range(high - initial):
        limiter.on_sample(latency_s=latency_s, inflight=limiter.limit, dropped=False)
        assert limiter.limit >= previous
        previous = limiter.limit
    assert limiter.limit == high


@given(
    bounds=BOUNDS,
    start=st.floats(min_value=0.0, max_value=1.0),
    excess_s=st.floats(min_value=1e-6, max_value=100.0),
    backoff_ratio=st.floats(min_value=0.01, max_value=0.99),
    inflight=st.integers(min_value=0, max_value=300),
)
def test_aimd_falls_to_min_while_latency_misses_target(
    bounds: tuple[int, int], start: float, excess_s: float, backoff_ratio: float, inflight: int
) -> None:
    low, high = bounds
    initial = low + round(start * (high - low))
    limiter = AimdLimit(
        AimdSettings(initial=initial, min_limit=low, max_limit=high, backoff_ratio=backoff_ratio)
    )
    previous = limiter.limit
    for _ in range(initial - low):  # every step removes at least one
        limiter.on_sample(latency_s=1.0 + excess_s, inflight=inflight, dropped=False)
        assert limiter.limit <= previous
        previous = limiter.limit
    assert limiter.limit == low


SAMPLES = st.lists(
    st.tuples(
        st.one_of(st.floats(min_value=0.0, max_value=10.0), st.sampled_from([math.nan, -1.0])),
        st.integers(min_value=0, max_value=2000),
        st.booleans(),
    ),
    max_size=200,
)


@given(bounds=BOUNDS, samples=SAMPLES)
def test_aimd_stays_within_bounds(bounds: tuple[int, int], samples: list[Sample]) -> None:
    low, high = bounds
    limits = run(AimdLimit(AimdSettings(initial=low, min_limit=low, max_limit=high)), samples)
    assert all(low <= limit <= high for limit in limits)


# -- gradient -----------------------------------------------------------------------------

STEADY = (1.0, 100, False)
# Ten steady samples, each adding smoothing * queue_size = 0.8 to a limit starting at 10.
WARM = [STEADY] * 10
WARM_LIMITS = [10, 11, 12, 13, 14, 14, 15, 16, 17, 18]

# id -> (settings, samples, limits after each sample)
GRADIENT: dict[str, tuple[dict[str, Any], list[Sample], list[int]]] = {
    "steady latency grows by queue_size * smoothing": ({"initial": 10}, WARM, WARM_LIMITS),
    # long 1.00666, short 3: gradient 0.5033, 18*0.8 + (18*0.5033 + 4)*0.2 = 17.01
    "latency spike shrinks": ({"initial": 10}, [*WARM, (3.0, 100, False)], [*WARM_LIMITS, 17]),
    # the long average follows: long 1.01329, gradient 0.50664 -> 16.13
    "sustained spike keeps shrinking": (
        {"initial": 10},
        [*WARM, (3.0, 100, False), (3.0, 100, False)],
        [*WARM_LIMITS, 17, 16],
    ),
    "within tolerance still grows": (
        {"initial": 10},
        [*WARM, (1.4, 100, False)],
        [*WARM_LIMITS, 18],  # gradient 1: 18.0 + 0.8
    ),
    # 10*0.8 + (10*0.5 + 4)*0.2 = 9.8
    "dropped: gradient one half": ({"initial": 10}, [DROP], [9]),
    "dropped while idle still shrinks": ({"initial": 10}, [(0.1, 0, True)], [9]),
    "app-limited keeps the limit": ({"initial": 10}, [(1.0, 4, False)] * 3, [10, 10, 10]),
    "half used is not app-limited": ({"initial": 10}, [(1.0, 5, False)], [10]),  # 10.8
    "zero latency counts as no queueing": ({"initial": 10}, [(0.0, 100, False)] * 2, [10, 11]),
    "nan latency is ignored": ({"initial": 10}, [(math.nan, 100, False)] * 2, [10, 10]),
    "infinite latency is ignored": ({"initial": 10}, [(math.inf, 100, False)], [10]),
    "clamped to max": ({"initial": 10, "max_limit": 11}, [STEADY] * 3, [10, 11, 11]),
    "clamped to min": ({"initial": 3, "min_limit": 3, "queue_size": 0}, [DROP] * 2, [3, 3]),
    "no smoothing": ({"initial": 10, "smoothing": 1.0}, [STEADY, DROP], [14, 11]),
    "no queue": ({"initial": 10, "queue_size": 0}, [STEADY] * 3, [10, 10, 10]),
}


@pytest.mark.parametrize(("settings", "samples", "limits"), GRADIENT.values(), ids=GRADIENT.keys())
def test_gradient_sequence(
    settings: dict[str, Any], samples: list[Sample], limits: list[int]
) -> None:
    assert run(GradientLimit(GradientSettings(**settings)), samples) == limits


def test_gradient_long_average_is_a_plain_mean_during_warmup() -> None:
    limiter = GradientLimit(GradientSettings(initial=10))
    run(limiter, [(1.0, 100, False), (2.0, 100, False), (3.0, 100, False)])
    assert limiter.long_latency_s == pytest.approx(2.0)
    assert limiter.short_latency_s == 3.0


def test_gradient_short_window_smooths_the_short_average() -> None:
    limiter = GradientLimit(GradientSettings(initial=10, short_window=3))
    run(limiter, [(1.0, 100, False), (3.0, 100, False)])
    assert limiter.short_latency_s == pytest.approx(2.0)  # factor 2 / (3 + 1)


def test_gradient_long_average_comes_down_fast_after_recovery() -> None:
    limiter = GradientLimit(GradientSettings(initial=10, long_window=100))
    run(limiter, [(10.0, 100, False)] * 10)
    run(limiter, [(1.0, 100, False)])
    # EWMA alone: 10 - 9 * 2 / 101 = 9.8218; then x0.95 because long > 2 * short.
    assert limiter.long_latency_s == pytest.approx((10.0 - 9.0 * 2.0 / 101.0) * 0.95)


def test_gradient_defaults() -> None:
    assert GradientSettings(initial=5) == GradientSettings(
        initial=5,
        min_limit=1,
        max_limit=1000,
        smoothing=0.2,
        tolerance=1.5,
        long_window=600,
        queue_size=4,
        short_window=1,
    )


GRADIENT_INVALID: dict[str, tuple[dict[str, Any], str]] = {
    "zero min": ({"initial": 5, "min_limit": 0}, "min_limit"),
    "max below min": ({"initial": 5, "min_limit": 5, "max_limit": 4}, "max_limit"),
    "initial above max": ({"initial": 11, "max_limit": 10}, "initial"),
    "zero smoothing": ({"initial": 5, "smoothing": 0.0}, "smoothing"),
    "smoothing above one": ({"initial": 5, "smoothing": 1.5}, "smoothing"),
    "nan smoothing": ({"initial": 5, "smoothing": math.nan}, "smoothing"),
    "tolerance below one": ({"initial": 5, "tolerance": 0.9}, "tolerance"),
    "infinite tolerance": ({"initial": 5, "tolerance": math.inf}, "tolerance"),
    "zero long window": ({"initial": 5, "long_window": 0}, "long_window"),
    "negative queue": ({"initial": 5, "queue_size": -1}, "queue_size"),
    "zero short window": ({"initial": 5, "short_window": 0}, "short_window"),
}


@pytest.mark.parametrize(
    ("kwargs", "field"), GRADIENT_INVALID.values(), ids=GRADIENT_INVALID.keys()
)
def test_gradient_invalid_settings(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=f"^{field} must"):
        GradientSettings(**kwargs)


@given(
    bounds=BOUNDS,
    latency_s=st.floats(min_value=0.0, max_value=100.0),
    queue_size=st.integers(min_value=1, max_value=8),
)
def test_gradient_rises_to_max_under_constant_latency(
    bounds: tuple[int, int], latency_s: float, queue_size: int
) -> None:
    low, high = bounds
    limiter = GradientLimit(
        GradientSettings(initial=low, min_limit=low, max_limit=high, queue_size=queue_size)
    )
    # Each sample adds smoothing * queue_size >= 0.2.
    for _ in range(5 * (high - low) + 5):
        limiter.on_sample(latency_s=latency_s, inflight=high, dropped=False)
    assert limiter.limit == high


@given(
    bounds=BOUNDS,
    queue_size=st.integers(min_value=0, max_value=8),
    rising=st.booleans(),
)
def test_gradient_falls_to_its_floor_under_overload(
    bounds: tuple[int, int], queue_size: int, rising: bool
) -> None:
    """Drops, or latency that keeps rising, drive the limit to max(min, 2 * queue_size)."""
    low, high = bounds
    limiter = GradientLimit(
        GradientSettings(initial=high, min_limit=low, max_limit=high, queue_size=queue_size)
    )
    latency_s = 1.0
    for _ in range(400):
        if rising:
            latency_s *= 1.5  # short keeps running away from long: gradient 0.5
        limiter.on_sample(latency_s=latency_s, inflight=high, dropped=not rising)
    floor = min(high, max(low, 2 * queue_size))
    assert limiter.estimate == pytest.approx(floor, abs=0.01)


@given(bounds=BOUNDS, samples=SAMPLES)
def test_gradient_stays_within_bounds(bounds: tuple[int, int], samples: list[Sample]) -> None:
    low, high = bounds
    limiter = GradientLimit(GradientSettings(initial=high, min_limit=low, max_limit=high))
    for latency_s, inflight, dropped in samples:
        limiter.on_sample(latency_s=latency_s, inflight=inflight, dropped=dropped)
        assert low <= limiter.limit <= high
        assert low <= limiter.estimate <= high
