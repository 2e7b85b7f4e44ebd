"""``Retry-After`` for a shed or rejected request, from how long the pool needs to drain.

Algorithm: the estimated drain time of the work ahead (``DrainRate.estimated_wait``), clamped
to ``[floor_s, cap_s]``. Only when that estimate is unknown (``None``, or not a number) is the
answer a constant: ``floor_s``. Clients told to come back when the queue will have drained
spread their retries instead of returning together after a fixed second.

HTTP wants whole seconds (``Retry-After: 120``); ``retry_after_header`` rounds up.

Parameters
    ``floor_s``  shortest advice, seconds (> 0): never ask for an immediate retry.
    ``cap_s``    longest advice, seconds (>= floor_s).
"""

from __future__ import annotations

import math


def retry_after_s(
    estimated_wait_s: float | None, *, floor_s: float = 1.0, cap_s: float = 120.0
) -> float:
    """Seconds a client should wait before retrying."""
    if not (math.isfinite(floor_s) and floor_s > 0.0):
        raise ValueError(f"floor_s must be a positive number, got {floor_s}")
    if not (math.isfinite(cap_s) and cap_s >= floor_s):
        raise ValueError(f"cap_s must be a number >= floor_s={floor_s}, got {cap_s}")
    if estimated_wait_s is None or math.isnan(estimated_wait_s):
        return floor_s
    return max(floor_s, min(cap_s, estimated_wait_s))


def retry_after_header(seconds: float) -> str:
    """The ``Retry-After`` header value: whole seconds, rounded up, at least 1."""
    if math.isnan(seconds):
        raise ValueError("seconds must be a number, got nan")
    return str(max(1, math.ceil(seconds)))
