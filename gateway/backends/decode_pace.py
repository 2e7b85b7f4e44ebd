"""How fast a backend streams once a request is past its prefill: seconds per output token.

Every stream that ends with more than one token gives its mean time per token after the
first, ``(end - first token) / (tokens - 1)``; the backend keeps the last ``window`` of them.
``upper`` is their 95th percentile (``None`` before ``min_samples``): a pace few streams fall
behind, whatever the batch they shared. A request that may still generate ``m`` tokens is
then expected to be done within about ``m * upper``: admission bounds each slot holder's
release by it (``admission/hold.py``), which the sample of past holds alone cannot know
(a holder asking for 16 tokens is not one of the long generations, however long it has been
waiting for its first token).
"""

from __future__ import annotations

import bisect
import math
from collections import deque

_QUANTILE = 0.95


class DecodePace:
    """A backend's recent streaming paces. Not thread-safe."""

    __slots__ = ("_min", "_order", "_sorted")

    def __init__(self, *, window: int = 64, min_samples: int = 8) -> None:
        if window < 1 or not 1 <= min_samples <= window:
            raise ValueError(f"need 1 <= min_samples <= window, got {min_samples}, {window}")
        self._order: deque[float] = deque(maxlen=window)
        self._sorted: list[float] = []
        self._min = min_samples

    def observe(self, seconds_per_token: float) -> None:
        if not (math.isfinite(seconds_per_token) and seconds_per_token >= 0.0):
            return
        if len(self._order) == self._order.maxlen:
            del self._sorted[bisect.bisect_left(self._sorted, self._order[0])]
        self._order.append(seconds_per_token)
        bisect.insort(self._sorted, seconds_per_token)

    def upper(self) -> float | None:
        """The 95th percentile of the recent paces, seconds per token."""
        if len(self._sorted) < self._min:
            return None
        return self._sorted[
            min(len(self._sorted) - 1, math.ceil(_QUANTILE * len(self._sorted)) - 1)
        ]
