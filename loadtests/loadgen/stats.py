"""Percentiles and the latency table, written once and used by every report.

Algorithm: linear interpolation between closest ranks (the "type 7" estimator that numpy
and spreadsheets use by default): for ``q`` in ``[0, 100]`` over ``n`` sorted values the
rank is ``h = (n - 1) * q / 100`` and the result is ``x[floor h] + (h - floor h) *
(x[floor h + 1] - x[floor h])``. Empty input gives ``None`` rather than a fake zero.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

PERCENTILES: tuple[float, ...] = (50.0, 95.0, 99.0)


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile of ``values`` (need not be sorted); ``None`` when empty."""
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile out of range: {q}")
    if not values:
        return None
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (rank - low) * (ordered[high] - ordered[low])


def percentile_table(
    values: Iterable[float], qs: Sequence[float] = PERCENTILES
) -> dict[str, float | None]:
    """``{"p50": ..., "p95": ..., "p99": ..., "mean": ..., "count": ...}`` of ``values``."""
    data = sorted(values)
    table: dict[str, float | None] = {f"p{q:g}": percentile(data, q) for q in qs}
    table["mean"] = sum(data) / len(data) if data else None
    table["count"] = float(len(data))
    return table


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """``numerator / denominator``; ``None`` when undefined, ``inf`` for x/0 with x > 0."""
    if numerator is None or denominator is None:
        return None
    if denominator == 0:
        return None if numerator == 0 else math.inf
    return numerator / denominator
