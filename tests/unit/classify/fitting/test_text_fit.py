"""Fitting the text model: vocabulary, per-format weights, cross-validation; distillation."""

from __future__ import annotations

import numpy as np
import pytest

from gateway.classify.fitting import distill
from gateway.classify.fitting.router_fit import Labelled, prompt_features
from gateway.classify.fitting.text_fit import (
    Described,
    Settings,
    cross_validate,
    fit_text,
    vocabulary,
)
from gateway.classify.text_terms import terms
from tests.support.text_models import toy_model

FILLER = ("red", "green", "blue", "cyan", "grey")


def _rows(n: int = 160) -> tuple[list[Labelled], list[str]]:
    """Free-form asks: the small model fails on "alpha". Multiple choice: on "beta"."""
    rows, groups = [], []
    for i in range(n):
        word = "alpha" if i % 2 else "beta"
        choice = i % 4 >= 2
        ask = f"{FILLER[i % 5]} {word} {FILLER[(i // 5) % 5]}"
        if choice:
            ask += "\nA. one\nB. two"
        fails = (word == "alpha") != choice
        rows.append(Labelled(ask, 0.0 if fails else 1.0, 1.0))
        groups.append("choice" if choice else "free")
    return rows, groups


def test_vocabulary_keeps_terms_seen_often_enough() -> None:
    sets = [frozenset({b"a", b"b"}), frozenset({b"a"}), frozenset({b"a", b"c"})]
    assert vocabulary(sets, 1) == (b"a", b"b", b"c")
    assert vocabulary(sets, 2) == (b"a",)


def test_each_format_learns_its_own_words() -> None:
    rows, _ = _rows()
    fitted = fit_text(rows, Settings(l2=1.0, min_df=2), about="test")
    model = fitted.model
    assert model.about == "test"

    def gain(ask: str) -> float:
        return model.raw(ask, prompt_features([ask])[0])

    assert gain("red alpha red") > gain("red beta red") + 0.5
    assert gain("red beta red\nA. one\nB. two") > gain("red alpha red\nA. one\nB. two") + 0.5
    # The scale is the raw gains on the training prompts.
    assert model.quantiles[0] == pytest.approx(min(fitted.raw), abs=1e-6)
    assert model.quantiles[-1] == pytest.approx(max(fitted.raw), abs=1e-6)


def test_cross_validation_scores_each_candidate_per_group() -> None:
    rows, groups = _rows()
    scores = cross_validate(rows, [Settings(1.0, 2), Settings(1.0, 999)], groups=groups, folds=3)
    assert set(scores[Settings(1.0, 2)].groups) == {"choice", "free"}
    # Half the prompts carry the whole gap: a perfect ranking scores 0.75, random 0.5.
    # With the words the outcomes separate; without (no term that frequent) they cannot.
    assert scores[Settings(1.0, 2)].mean == pytest.approx(0.75, abs=0.01)
    assert scores[Settings(1.0, 999)].mean < 0.6


def test_the_imitation_learns_the_teachers_ranking_and_merges_into_the_model() -> None:
    rng = np.random.default_rng(0)
    asks = [f"{FILLER[i % 5]} {'beta' if rng.random() < 0.5 else 'gamma'}" for i in range(200)]
    # The teacher: the small model fails with "beta".
    teacher = np.asarray([[0.99, 0.1 if "beta" in a else 0.95] for a in asks])
    seen = Described.of(asks)
    imitation = distill.fit_imitation(seen.features, seen.terms, teacher, l2=1.0, min_df=2)
    gains = imitation.gains(seen.features, seen.terms)
    assert distill.fidelity(gains, teacher) > 0.8
    model = toy_model()
    merged = distill.merge(model, imitation)
    assert set(merged.vocabulary) == set(model.vocabulary) | {
        t.decode() for t in imitation.vocabulary
    }
    features = prompt_features(["red gamma"])[0]
    # The text part scores as before; the distilled part adds its gain ("beta" > "gamma").
    assert merged.formats["free"].small.terms[merged.vocabulary.index("alpha")] == -10.0
    assert merged.raw("red beta", features) > merged.raw("red gamma", features) + 0.5


def test_the_imitation_needs_two_probabilities_per_prompt() -> None:
    seen = Described.of(["a", "b"])
    with pytest.raises(ValueError, match="two probabilities"):
        distill.fit_imitation(seen.features, seen.terms, [[0.5], [0.5]], l2=1.0, min_df=1)


def test_row_weights_make_the_imitation_follow_the_weighted_prompts() -> None:
    # The same asks twice, with teachers that disagree on "beta": the first copy says the
    # small model fails with it, the second says it does not. The weighted copy wins.
    asks = [f"{FILLER[i % 5]} {'beta' if i % 2 else 'gamma'}" for i in range(100)] * 2
    small = [0.1 if "beta" in a and i < 100 else 0.95 for i, a in enumerate(asks)]
    teacher = np.asarray([[0.99, p] for p in small])
    seen = Described.of(asks)
    probe = Described.of(["red beta", "red gamma"])

    def beta_over_gamma(first: float, second: float) -> float:
        weights = [first] * 100 + [second] * 100
        imitation = distill.fit_imitation(
            seen.features, seen.terms, teacher, l2=1.0, min_df=1, row_weights=weights
        )
        gains = imitation.gains(probe.features, probe.terms)
        return float(gains[0] - gains[1])

    assert beta_over_gamma(10.0, 1.0) > beta_over_gamma(1.0, 10.0) + 0.3
    with pytest.raises(ValueError, match="positive weight"):
        distill.fit_imitation(
            seen.features, seen.terms, teacher, l2=1.0, min_df=1, row_weights=[0.0] * 200
        )


def test_fidelity_is_the_rank_correlation() -> None:
    teacher = np.asarray([[0.9, 0.1], [0.9, 0.5], [0.9, 0.8]])  # gains 0.8, 0.4, 0.1
    assert distill.fidelity(np.asarray([3.0, 2.0, 1.0]), teacher) == pytest.approx(1.0)
    assert distill.fidelity(np.asarray([1.0, 2.0, 3.0]), teacher) == pytest.approx(-1.0)
    assert terms("beta") == {b"beta"}
