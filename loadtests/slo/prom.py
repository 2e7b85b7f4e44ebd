"""Quantiles of a Prometheus histogram read from a ``/metrics`` text, over all its series.

Algorithm: the ``<name>_bucket`` lines of every label set are summed per upper bound ``le``
(cumulative counts add up), then ``histogram_quantile`` follows Prometheus' own: the rank
``q * total`` falls in the first bucket whose cumulative count reaches it, and the value is
interpolated linearly between that bucket's lower and upper bounds (the first bucket starts at
0); a rank in the ``+Inf`` bucket gives the highest finite bound. No observation: ``None``.
"""

from __future__ import annotations

import math
import re

_LE = re.compile(r'le="([^"]+)"')


def histogram_buckets(text: str, name: str) -> list[tuple[float, float]]:
    """``(upper bound, cumulative count)`` of histogram ``name``, summed over its series."""
    prefix = name + "_bucket"
    totals: dict[float, float] = {}
    for line in text.splitlines():
        if not line.startswith(prefix) or line[len(prefix) : len(prefix) + 1] not in ("{", " "):
            continue
        labels, _, value = line.rpartition(" ")
        match = _LE.search(labels)
        if match is None:
            continue
        le = math.inf if match.group(1) == "+Inf" else float(match.group(1))
        totals[le] = totals.get(le, 0.0) + float(value)
    return sorted(totals.items())


def histogram_quantile(q: float, buckets: list[tuple[float, float]]) -> float | None:
    """The ``q`` quantile (0..1) of cumulative ``buckets``; ``None`` without observations."""
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile out of range: {q}")
    if not buckets or buckets[-1][1] <= 0:
        return None
    rank = q * buckets[-1][1]
    lower, below = 0.0, 0.0
    for upper, cumulative in buckets:
        if cumulative >= rank and cumulative > below:
            if math.isinf(upper):
                return lower
            return lower + (upper - lower) * (rank - below) / (cumulative - below)
        lower, below = upper, cumulative
    return lower
