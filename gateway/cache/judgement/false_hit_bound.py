"""The false-hit bound: from a user's ``max_false_hit_rate`` to a verifier threshold that keeps it.

A bound curve holds counts measured on held-out calibration pairs (QQP train split, natural
label mix, never the test split) at each candidate threshold ``t`` (ascending): ``hits``
(pairs scored at least ``t``) and ``false_hits`` (those among them labelled different
questions), with ``positives`` (duplicates) and ``pairs`` (all pairs) of the set.

Algorithm (``threshold_for``): fixed-sequence testing from the strictest threshold down. At
each threshold the one-sided Clopper-Pearson upper confidence bound (level ``confidence``,
default 0.95) of the false-hit rate is computed from (false hits, hits); the walk stops at
the first threshold whose bound exceeds the rate asked, and the last threshold that passed
is the operating one. Testing in a fixed order and stopping at the first failure keeps the
chance that any threshold passed wrongly at ``1 - confidence`` without a correction for
the number of thresholds, so the rate is met on new data of the same mix with that
confidence, not merely on average. The walk starts at the first threshold with at least
``start`` hits, ``start_factor`` (10) times the fewest hits whose bound can pass at all (0 false
hits in n bounds the rate at ``1 - (1 - confidence) ** (1 / n)``, about 3 / n): a stricter
start would stop at the first mislabelled pair among the very top scores. The start
depends on the scores only, never on the labels. No threshold passing: a threshold above
every score (no semantic hit).

``chr_auc`` is the P-CHR AUC (after Redis's "Closing the Calibration Gap in Semantic
Caching", arXiv 2606.19719, as we read it from its abstract): precision against cache hit
ratio (hits over all pairs asked) as the threshold sweeps, the area under it by the
trapezoid rule from a hit ratio of 0 (taken at the first point's precision) to that of a
perfect cache (the share of duplicates), divided by that ratio, so rules that refuse some
pairs outright (a floor, the guard) compare with those that do not: 1 is perfect, a random
rule scores about the share of duplicates.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

Floats = npt.NDArray[np.float64]
NEVER = 1.0 + 1e-9  # a threshold above every probability: no hit


def upper_bound(false_hits: int, hits: int, confidence: float = 0.95) -> float:
    """One-sided Clopper-Pearson upper bound of a rate seen as ``false_hits`` in ``hits``."""
    if hits <= 0:
        return 1.0
    if false_hits >= hits:
        return 1.0
    alpha = 1.0 - confidence
    lo, hi = false_hits / hits, 1.0
    # P(X <= k | n, p) falls as p rises: bisect for the p where it equals alpha.
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if _binomial_cdf(false_hits, hits, mid) > alpha:
            lo = mid
        else:
            hi = mid
    return hi


def _binomial_cdf(k: int, n: int, p: float) -> float:
    if p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 0.0 if k < n else 1.0
    log_p, log_q = math.log(p), math.log1p(-p)
    terms = [
        math.lgamma(n + 1)
        - math.lgamma(i + 1)
        - math.lgamma(n - i + 1)
        + i * log_p
        + (n - i) * log_q
        for i in range(k + 1)
    ]
    top = max(terms)
    return math.exp(top) * sum(math.exp(t - top) for t in terms)


@dataclass(frozen=True)
class BoundCurve:
    thresholds: Floats  # ascending
    hits: npt.NDArray[np.int64]
    false_hits: npt.NDArray[np.int64]
    positives: int
    pairs: int
    confidence: float = 0.95
    # 10: chosen on the calibration curves (QQP train split): at 3 the walk met a dip among
    # the first hundred hits and stopped before any threshold at bounds a curve could keep.
    start_factor: float = 10.0

    def start(self, max_false_hit_rate: float) -> int:
        """Hits at the first threshold tested for ``max_false_hit_rate``."""
        fewest = math.log(1.0 - self.confidence) / math.log1p(-max_false_hit_rate)
        return math.ceil(self.start_factor * fewest)

    def threshold_for(self, max_false_hit_rate: float) -> float:
        """The loosest threshold reached by fixed-sequence testing from the strictest."""
        chosen = NEVER
        start = self.start(max_false_hit_rate)
        for i in range(len(self.thresholds) - 1, -1, -1):
            hits, false = int(self.hits[i]), int(self.false_hits[i])
            if hits < start:
                continue
            if upper_bound(false, hits, self.confidence) > max_false_hit_rate:
                break
            chosen = float(self.thresholds[i])
        return chosen

    def at(self, threshold: float) -> tuple[float, float, int]:
        """(precision, recall, hits) on the calibration pairs at ``threshold``."""
        i = int(np.searchsorted(self.thresholds, threshold, side="left"))
        if i >= len(self.thresholds):
            return 1.0, 0.0, 0
        hits, false = int(self.hits[i]), int(self.false_hits[i])
        true = hits - false
        return (true / hits if hits else 1.0), true / max(1, self.positives), hits

    def chr_auc(self) -> float:
        return chr_auc(self.hits, self.false_hits, self.pairs, self.positives)

    def to_dict(self) -> dict[str, Any]:
        return {
            "thresholds": [float(t) for t in self.thresholds],
            "hits": [int(h) for h in self.hits],
            "false_hits": [int(f) for f in self.false_hits],
            "positives": self.positives,
            "pairs": self.pairs,
            "confidence": self.confidence,
            "start_factor": self.start_factor,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BoundCurve:
        return cls(
            thresholds=np.asarray(data["thresholds"], np.float64),
            hits=np.asarray(data["hits"], np.int64),
            false_hits=np.asarray(data["false_hits"], np.int64),
            positives=int(data["positives"]),
            pairs=int(data["pairs"]),
            confidence=float(data.get("confidence", 0.95)),
            start_factor=float(data.get("start_factor", 10.0)),
        )


def bound_curve(
    scores: Floats, labels: Floats, points: int = 400, *, confidence: float = 0.95
) -> BoundCurve:
    """Counts of "score >= t" at up to ``points`` thresholds among the distinct positive
    scores (a score of 0 means refused: below the cosine floor, or vetoed)."""
    order = np.argsort(-scores, kind="stable")
    s, y = scores[order], labels[order]
    true = np.cumsum(y)
    hits = np.arange(1, len(y) + 1)
    last = np.flatnonzero(np.r_[s[1:] != s[:-1], True])  # the end of each run of equal scores
    last = last[s[last] > 0]
    if last.size == 0:
        empty = np.zeros(0, np.int64)
        return BoundCurve(np.zeros(0), empty, empty, int(labels.sum()), len(labels), confidence)
    # Dense where hits are few (the strict end, where a bound is decided), sparse after.
    keep = np.unique(np.r_[last[:points], last[np.linspace(0, len(last) - 1, points).astype(int)]])
    keep = np.intersect1d(last, keep)
    return BoundCurve(
        thresholds=s[keep][::-1].astype(np.float64).copy(),
        hits=hits[keep][::-1].astype(np.int64).copy(),
        false_hits=(hits[keep] - true[keep])[::-1].astype(np.int64).copy(),
        positives=int(labels.sum()),
        pairs=len(labels),
        confidence=confidence,
    )


def chr_auc(
    hits: npt.NDArray[Any], false_hits: npt.NDArray[Any], pairs: int, positives: int
) -> float:
    """Area under precision against hit ratio (``hits / pairs``) from ratio 0 to the ratio of
    a perfect cache (``positives / pairs``), divided by that ratio: 1 for a perfect rule,
    about the share of positives for a random one; past the largest ratio a rule reaches it
    gets no area."""
    h = np.asarray(hits, np.float64)
    if h.size == 0 or pairs <= 0 or positives <= 0:
        return 0.0
    cap = positives / pairs
    order = np.argsort(h)
    h, f = h[order], np.asarray(false_hits, np.float64)[order]
    ratio = np.r_[0.0, h / pairs]
    precision = (h - f) / np.maximum(h, 1.0)
    precision = np.r_[precision[0], precision]
    area = 0.0
    for i in range(1, len(ratio)):
        lo, hi = ratio[i - 1], min(ratio[i], cap)
        if hi <= lo:
            break
        # the precision at ``hi`` on the segment's line (the segment may end past the cap)
        t = (hi - lo) / (ratio[i] - lo)
        p_hi = precision[i - 1] + t * (precision[i] - precision[i - 1])
        area += (hi - lo) * 0.5 * (precision[i - 1] + p_hi)
    return float(area / cap)
