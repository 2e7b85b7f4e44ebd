"""The real-engine predictor check's pure parts: its plan and the error table per cell."""

from __future__ import annotations

import pytest

from loadtests.real.predictor import Plan, Run, Sample
from loadtests.real.predictor_table import errors, markdown, measured, table


def sample(observed: float | None, predicted: float | None, prior: float | None = 1.0,
           *, cell: str = "short x1", warmup: bool = False) -> Sample:  # fmt: skip
    return Sample(cell, warmup, 200, observed, predicted, prior)


def test_the_plan_runs_every_length_at_every_concurrency() -> None:
    plan = Plan(lengths=(("short", 16), ("long", 384)), rounds=3, warmup_rounds=1, passes=2)
    assert plan.cells() == [
        ("short x1", 16, 1), ("short x2", 16, 2), ("short x4", 16, 4),
        ("long x1", 384, 1), ("long x2", 384, 2), ("long x4", 384, 4),
    ]  # fmt: skip
    assert plan.requests() == 7 * 2 * (1 + 2 * 3)


@pytest.mark.parametrize(
    ("pairs", "p50_ms", "p90_ms", "relative_p50", "bias_ms"),
    [
        # (observed, predicted) seconds
        ([(1.0, 1.0)], 0.0, 0.0, 0.0, 0.0),
        ([(1.0, 0.5), (2.0, 2.5)], 500.0, 500.0, 0.375, 0.0),
        ([(0.1, 0.2), (0.2, 0.2), (0.4, 0.2)], 100.0, 180.0, 0.5, 0.0),
        ([(2.0, 1.0), (2.0, 1.0), (2.0, 1.0)], 1000.0, 1000.0, 0.5, 1000.0),  # optimistic
        ([(1.0, 3.0)], 2000.0, 2000.0, 2.0, -2000.0),  # pessimistic
    ],
)
def test_errors_absolute_relative_and_signed(
    pairs: list[tuple[float, float]],
    p50_ms: float,
    p90_ms: float,
    relative_p50: float,
    bias_ms: float,
) -> None:
    found = errors([sample(o, p) for o, p in pairs], "c")
    assert found.requests == len(pairs)
    assert found.error_p50_ms == pytest.approx(p50_ms)
    assert found.error_p90_ms == pytest.approx(p90_ms)
    assert found.relative_p50 == pytest.approx(relative_p50)
    assert found.bias_ms == pytest.approx(bias_ms)


def test_the_prior_is_scored_on_the_same_requests() -> None:
    found = errors([sample(1.0, 0.9, prior=0.2), sample(0.5, 0.5, prior=0.3)], "c")
    assert found.prior_p50_ms == pytest.approx(500.0)  # |1.0-0.2|=0.8 and |0.5-0.3|=0.2
    assert found.error_p50_ms == pytest.approx(50.0)
    assert found.prior_rms_ms == pytest.approx(1000 * (0.34**0.5))  # (0.64 + 0.04) / 2
    assert found.rms_ms == pytest.approx(1000 * (0.005**0.5))  # (0.01 + 0) / 2


def test_the_table_leaves_out_the_warm_up_and_requests_without_a_pair() -> None:
    plan = Plan(lengths=(("short", 16),), clients=(1, 2))
    run = Run("llamacpp", plan, [
        sample(9.0, 0.1, warmup=True),
        sample(None, 0.1),
        sample(0.2, 0.1),
        sample(0.4, 0.3, cell="short x2"),
        sample(0.6, 0.3, cell="short x2"),
    ])  # fmt: skip
    assert len(measured(run)) == 3
    rows = table(run)
    assert [(r.cell, r.requests) for r in rows] == [("short x1", 1), ("short x2", 2), ("all", 3)]
    assert rows[1].error_p50_ms == pytest.approx(200.0)
    text = markdown(rows)
    assert text.count("\n") == 2 + 3
    # RMS: sqrt((0.01 + 0.09) / 2) and sqrt((0.36 + 0.16) / 2)
    assert "| short x2 | 2 | 500 | 200 / 280 | 38% / 48% | +200 | 224 | 500 / 580 | 510 |" in text
