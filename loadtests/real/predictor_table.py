"""Errors of the TTFT predictor per cell of a real-engine run (``predictor.py``).

Per cell, over its measured requests (the warm-up pass left out): the observed TTFT at the
replica (p50), the absolute error |observed - predicted| (p50, p90), the same relative to
the observed TTFT (p50, p90), the signed median error (observed - predicted: positive when
the predictor is optimistic), the root-mean-square error (what the predictor's regression
minimises), and the prior's absolute error on the same requests (p50, p90) and its RMS
error. Percentiles interpolate linearly (``numpy.percentile``). A last row pools all cells.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from loadtests.real.predictor import Run, Sample


@dataclass(frozen=True, slots=True)
class CellErrors:
    cell: str
    requests: int
    observed_p50_ms: float
    error_p50_ms: float
    error_p90_ms: float
    relative_p50: float
    relative_p90: float
    bias_ms: float
    rms_ms: float
    prior_p50_ms: float
    prior_p90_ms: float
    prior_rms_ms: float


def measured(run: Run) -> list[Sample]:
    """The requests after the warm-up pass that have a prediction and an observation."""
    return [
        s
        for s in run.samples
        if not s.warmup and s.observed_s is not None and s.predicted_s is not None
    ]


def errors(samples: Sequence[Sample], cell: str) -> CellErrors:
    observed = np.array([s.observed_s for s in samples], dtype=float)
    signed = observed - np.array([s.predicted_s for s in samples], dtype=float)
    prior_signed = observed - np.array([s.prior_s for s in samples], dtype=float)
    prior = np.abs(prior_signed)
    relative = np.abs(signed) / np.maximum(observed, 1e-9)
    return CellErrors(
        cell=cell,
        requests=len(samples),
        observed_p50_ms=1000 * float(np.median(observed)),
        error_p50_ms=1000 * _pct(np.abs(signed), 50),
        error_p90_ms=1000 * _pct(np.abs(signed), 90),
        relative_p50=_pct(relative, 50),
        relative_p90=_pct(relative, 90),
        bias_ms=1000 * float(np.median(signed)),
        rms_ms=1000 * _rms(signed),
        prior_p50_ms=1000 * _pct(prior, 50),
        prior_p90_ms=1000 * _pct(prior, 90),
        prior_rms_ms=1000 * _rms(prior_signed),
    )


def table(run: Run) -> list[CellErrors]:
    samples = measured(run)
    rows = []
    for cell, _, _ in run.plan.cells():
        mine = [s for s in samples if s.cell == cell]
        if mine:
            rows.append(errors(mine, cell))
    if samples:
        rows.append(errors(samples, "all"))
    return rows


def markdown(rows: Sequence[CellErrors]) -> str:
    head = (
        "| cell | requests | observed TTFT p50 ms | error p50 / p90 ms "
        "| relative error p50 / p90 | bias ms | RMS error ms "
        "| prior's error p50 / p90 ms | prior's RMS error ms |\n"
        "|---|---|---|---|---|---|---|---|---|\n"
    )
    return head + "".join(
        f"| {r.cell} | {r.requests} | {r.observed_p50_ms:.0f} "
        f"| {r.error_p50_ms:.0f} / {r.error_p90_ms:.0f} "
        f"| {r.relative_p50:.0%} / {r.relative_p90:.0%} | {r.bias_ms:+.0f} | {r.rms_ms:.0f} "
        f"| {r.prior_p50_ms:.0f} / {r.prior_p90_ms:.0f} | {r.prior_rms_ms:.0f} |\n"
        for r in rows
    )


def _pct(values: np.ndarray, q: float) -> float:
    return float(np.percentile(values, q))


def _rms(values: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(values))))
