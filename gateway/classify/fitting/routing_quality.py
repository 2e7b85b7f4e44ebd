"""Quality of a strong/weak router: APGR and CPT (Ong et al., "RouteLLM", arXiv 2406.18665).

Each prompt ``i`` has the weak model's quality ``w_i`` and the strong model's ``s_i`` (1/0 for
right/wrong, or a judge's score); its gain is ``g_i = s_i - w_i``. A router scores prompts
and sends the top share of them to the strong model. Sending the top ``m`` recovers
``G(m) = sum of their gains`` out of the whole gap ``G(n) = sum of all gains``; the
performance gap recovered is ``PGR(share) = G(share * n) / G(n)``.

Ties: prompts with equal scores cannot be told apart, so a share that splits a group of
tied prompts takes the group's mean gain for each prompt it takes (the expectation under a
random order within the group). A router that gives every prompt the same score therefore
recovers exactly ``share`` of the gap.

- ``apgr``: the area under ``PGR`` over shares 0, 10%, ..., 100% (trapezoid rule, as
  RouteLLM's evaluation does); random routing scores 0.5, a perfect router up to 1.
- ``cpt``: the least share of strong calls whose PGR reaches a target (50% or 80%), found
  on a grid of ``cpt_steps`` shares (default 1,000, so to 0.1%).

O(n log n) for the sort, then O(1) per share; numpy only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Floats = npt.NDArray[np.float64]
APGR_SHARES = tuple(i / 10 for i in range(11))


@dataclass(frozen=True, slots=True)
class GapCurve:
    """``G(m)`` at every whole ``m`` (ties averaged), for one router on one benchmark."""

    cumulative: Floats  # length n + 1: gain recovered by the top 0, 1, ..., n prompts

    @classmethod
    def of(
        cls, scores: Sequence[float], weak: Sequence[float], strong: Sequence[float]
    ) -> GapCurve:
        s = np.asarray(scores, dtype=np.float64)
        gains = np.asarray(strong, dtype=np.float64) - np.asarray(weak, dtype=np.float64)
        if s.shape != gains.shape or s.ndim != 1 or len(s) == 0:
            raise ValueError("need equally many scores and outcomes, at least one")
        if gains.sum() <= 0:
            raise ValueError("the strong model must do better than the weak one overall")
        order = np.argsort(-s, kind="stable")
        sorted_scores, sorted_gains = s[order], gains[order]
        # Every prompt of a tie group gets the group's mean gain.
        starts = np.flatnonzero(np.r_[True, sorted_scores[1:] != sorted_scores[:-1]])
        sums = np.add.reduceat(sorted_gains, starts)
        sizes = np.diff(np.r_[starts, len(s)])
        averaged = np.repeat(sums / sizes, sizes)
        return cls(np.r_[0.0, np.cumsum(averaged)])

    @property
    def size(self) -> int:
        return len(self.cumulative) - 1

    def pgr(self, share: float) -> float:
        """Performance gap recovered with ``share`` of the prompts sent to the strong model."""
        position = min(max(share, 0.0), 1.0) * self.size
        low = int(np.floor(position))
        high = min(low + 1, self.size)
        recovered = self.cumulative[low] + (position - low) * (
            self.cumulative[high] - self.cumulative[low]
        )
        return float(recovered / self.cumulative[-1])

    def apgr(self) -> float:
        values = [self.pgr(share) for share in APGR_SHARES]
        # Trapezoid over 11 equally spaced shares.
        return float((sum(values) - (values[0] + values[-1]) / 2) / (len(values) - 1))

    def cpt(self, target: float, steps: int = 1000) -> float:
        """Least share of strong calls recovering ``target`` of the gap (1.0 if none does
        before all calls go strong)."""
        for step in range(steps + 1):
            share = step / steps
            if self.pgr(share) >= target - 1e-12:
                return share
        return 1.0


@dataclass(frozen=True, slots=True)
class RouterQuality:
    apgr: float
    cpt50: float
    cpt80: float


def router_quality(
    scores: Sequence[float], weak: Sequence[float], strong: Sequence[float]
) -> RouterQuality:
    """APGR, CPT(50%) and CPT(80%) of ``scores`` (higher: more in need of the strong model)."""
    curve = GapCurve.of(scores, weak, strong)
    return RouterQuality(curve.apgr(), curve.cpt(0.5), curve.cpt(0.8))
