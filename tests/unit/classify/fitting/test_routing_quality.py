"""APGR and CPT of strong/weak routers, on tables and against a brute-force expectation."""

from __future__ import annotations

import itertools
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.classify.fitting.routing_quality import GapCurve, router_quality

# Four prompts: only the last two gain from the strong model (weak wrong, strong right).
WEAK = [1.0, 1.0, 0.0, 0.0]
STRONG = [1.0, 1.0, 1.0, 1.0]


@pytest.mark.parametrize(
    ("scores", "apgr", "cpt50", "cpt80"),
    [
        ([0.1, 0.2, 0.8, 0.9], 0.75, 0.25, 0.4),  # perfect: the gainers first
        ([0.9, 0.8, 0.2, 0.1], 0.25, 0.75, 0.9),  # backwards
        ([0.5, 0.5, 0.5, 0.5], 0.5, 0.5, 0.8),  # all tied: random routing
        ([0.1, 0.1, 0.9, 0.9], 0.75, 0.25, 0.4),  # ties within each group do not matter
        ([0.9, 0.1, 0.9, 0.1], 0.5, 0.5, 0.8),  # a tie split half and half
    ],
)
def test_table(scores: list[float], apgr: float, cpt50: float, cpt80: float) -> None:
    quality = router_quality(scores, WEAK, STRONG)
    assert quality.apgr == pytest.approx(apgr)
    assert quality.cpt50 == pytest.approx(cpt50)
    assert quality.cpt80 == pytest.approx(cpt80)


def test_negative_gains_and_judge_scores() -> None:
    # Scores on a 1-10 scale; the second prompt is one where the weak model did better.
    curve = GapCurve.of([0.9, 0.8, 0.1], weak=[5.0, 9.0, 7.0], strong=[9.0, 8.0, 7.0])
    assert curve.pgr(1 / 3) == pytest.approx(4 / 3)  # more than the whole gap at one call
    assert curve.pgr(2 / 3) == pytest.approx(1.0)
    assert curve.cpt(0.5) == pytest.approx(0.125, abs=1e-3)


def brute_force_pgr(scores: list[int], gains: list[int], taken: int) -> float:
    """Expected gain of the top ``taken`` under every order that respects the scores."""
    orders = [
        order
        for order in itertools.permutations(range(len(scores)))
        if all(scores[a] >= scores[b] for a, b in itertools.pairwise(order))
    ]
    means = statistics.mean(sum(gains[i] for i in order[:taken]) for order in orders)
    return means / sum(gains)


@given(
    st.lists(st.tuples(st.integers(0, 2), st.integers(-1, 1)), min_size=2, max_size=6).filter(
        lambda rows: sum(g for _, g in rows) > 0
    )
)
def test_ties_take_the_expectation_over_random_orders(rows: list[tuple[int, int]]) -> None:
    scores = [s for s, _ in rows]
    gains = [g for _, g in rows]
    curve = GapCurve.of(scores, [0.0] * len(rows), gains)
    for taken in range(len(rows) + 1):
        expected = brute_force_pgr(scores, gains, taken)
        assert curve.pgr(taken / len(rows)) == pytest.approx(expected)


def test_input_is_checked() -> None:
    with pytest.raises(ValueError, match="at least one"):
        router_quality([], [], [])
    with pytest.raises(ValueError, match="strong model must do better"):
        router_quality([0.1, 0.2], [1.0, 1.0], [1.0, 0.0])
