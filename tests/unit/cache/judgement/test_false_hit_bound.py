"""The false-hit bound: Clopper-Pearson bounds, fixed-sequence thresholds, P-CHR AUC."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from gateway.cache.judgement.false_hit_bound import (
    NEVER,
    BoundCurve,
    bound_curve,
    chr_auc,
    upper_bound,
)


@pytest.mark.parametrize(
    ("false_hits", "hits", "expected"),
    [
        (0, 150, 1 - 0.05 ** (1 / 150)),  # no false hit: the closed form
        (0, 10, 1 - 0.05 ** (1 / 10)),
        (10, 10, 1.0),
        (0, 0, 1.0),
        (5, 1000, 0.010484),  # scipy.stats.beta.ppf(0.95, 6, 995)
        (20, 1000, 0.028930),  # scipy.stats.beta.ppf(0.95, 21, 980)
    ],
)
def test_upper_bound(false_hits: int, hits: int, expected: float) -> None:
    assert upper_bound(false_hits, hits) == pytest.approx(expected, abs=2e-5)


def test_the_bound_is_above_the_rate_seen_and_falls_with_more_evidence() -> None:
    assert upper_bound(2, 100) > 0.02
    assert upper_bound(20, 1000) < upper_bound(2, 100)


def _curve(hits: list[int], false: list[int], pairs: int = 10_000) -> BoundCurve:
    n = len(hits)
    return BoundCurve(
        thresholds=np.linspace(0.1, 0.9, n),
        hits=np.array(hits),
        false_hits=np.array(false),
        positives=max(hits),
        pairs=pairs,
        start_factor=3.0,
    )


def test_the_walk_goes_from_the_strictest_threshold_down_and_stops_at_the_first_failure() -> None:
    # thresholds 0.1 .. 0.9; hits fall as the threshold rises
    curve = _curve([5000, 3000, 2000, 1000, 500], [400, 30, 10, 3, 0])
    assert curve.threshold_for(0.02) == pytest.approx(0.3)  # 30 of 3000 passes, 400 of 5000 not
    assert curve.threshold_for(0.1) == pytest.approx(0.1)  # 400 of 5000 (8%) passes at 10%


def test_a_looser_threshold_after_a_failure_is_never_reached() -> None:
    curve = _curve([5000, 3000, 2000, 1000, 500], [20, 100, 10, 3, 0])
    assert curve.threshold_for(0.02) == pytest.approx(0.5)  # 0.1 would pass, 0.3 failed first


def test_the_walk_starts_where_a_pass_is_possible() -> None:
    curve = _curve([5000, 3000, 2000, 400, 100], [400, 30, 10, 3, 1])
    # 0.02 needs 3 x 148.3 hits to start: the points with 400 and 100 hits are not tested
    # (tested, 3 of 400 would fail and stop the walk)
    assert curve.start(0.02) == math.ceil(3 * math.log(0.05) / math.log1p(-0.02))
    assert curve.threshold_for(0.02) == pytest.approx(0.3)
    assert replace(curve, start_factor=10.0).start(0.02) == 1483  # the default factor


def test_no_threshold_passing_means_no_hit() -> None:
    assert _curve([5000, 3000], [1000, 600]).threshold_for(0.02) >= NEVER
    empty = BoundCurve(np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int64), 0, 0)
    assert empty.threshold_for(0.02) >= NEVER


def test_at_reads_precision_recall_and_hits() -> None:
    curve = _curve([5000, 3000, 2000, 1000, 500], [400, 30, 10, 3, 0])
    assert curve.at(0.3) == (2970 / 3000, 2970 / 5000, 3000)
    assert curve.at(0.95) == (1.0, 0.0, 0)


def test_bound_curve_counts_hits_at_each_distinct_score() -> None:
    scores = np.array([0.9, 0.9, 0.8, 0.5, 0.0, 0.3])
    labels = np.array([1.0, 0.0, 1.0, 1.0, 1.0, 0.0])
    curve = bound_curve(scores, labels)
    assert curve.thresholds.tolist() == [0.3, 0.5, 0.8, 0.9]
    assert curve.hits.tolist() == [5, 4, 3, 2]
    assert curve.false_hits.tolist() == [2, 1, 1, 1]
    assert (curve.positives, curve.pairs) == (4, 6)
    again = BoundCurve.from_dict(curve.to_dict())
    assert again.to_dict() == curve.to_dict()


@pytest.mark.parametrize(
    ("hits", "false", "pairs", "positives", "area"),
    [
        ([10], [0], 10, 10, 1.0),  # every pair a right hit
        ([10], [5], 10, 5, 0.5),  # random: the share of positives
        ([5, 10], [0, 5], 10, 5, 1.0),  # perfect up to the perfect cache's ratio
        # precision 1 to 0.4, then on the line to 0.5 at ratio 1: 1 - 0.5 / 6 at the cap 0.5
        ([4, 10], [0, 5], 10, 5, (0.4 + 0.1 * 0.5 * (1.0 + 1.0 - 0.5 / 6)) / 0.5),
        ([2], [0], 10, 5, 0.4),  # reaches ratio 0.2 of 0.5, precision 1 there
        ([], [], 10, 5, 0.0),
    ],
)
def test_chr_auc(
    hits: list[int], false: list[int], pairs: int, positives: int, area: float
) -> None:
    assert chr_auc(np.array(hits), np.array(false), pairs, positives) == pytest.approx(area)
