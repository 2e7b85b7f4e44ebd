"""The difficulty score on the labelled evaluation set: held-out ROC AUC, accuracy, share.

Weights are fitted on one stratified half and scored on the other, both ways; a second check
fits on the templated prompts and scores the hand-written ones, which share no wording with
them. The shipped defaults must be what a fit on the whole set gives.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import astuple

import pytest

from gateway.classify import FEATURE_NAMES, DifficultyWeights, Features, request_features
from gateway.classify.difficulty import score_difficulty
from gateway.classify.fitting.evaluation import accuracy, positive_share, roc_auc
from gateway.classify.fitting.weights_fit import fit_logistic
from loadtests.kit.difficulty_set import build
from loadtests.kit.difficulty_set.handwritten import ALL as HANDWRITTEN
from loadtests.kit.difficulty_set.held_out import (
    DATA,
    Item,
    fit_and_score,
    halves,
    labels_of,
    read_items,
)


@pytest.fixture(scope="module")
def items() -> list[Item]:
    return read_items()


@pytest.fixture(scope="module")
def features(items: list[Item]) -> list[Features]:
    return [request_features([{"role": "user", "content": i["prompt"]}]) for i in items]


def report(
    out: pytest.CaptureFixture[str],
    name: str,
    scores: list[float],
    labels: list[int],
    threshold: float,
) -> float:
    auc = roc_auc(scores, labels)
    acc = accuracy(scores, labels, threshold)
    share = positive_share(scores, threshold)
    with out.disabled():  # the figures are the point of this test: always show them
        print(
            f"\n[classify] {name}: n={len(scores)} ROC AUC {auc:.3f}, "
            f"accuracy {acc:.3f}, share hard {share:.3f}"
        )
    return auc


def test_the_file_is_what_the_builder_makes() -> None:
    assert DATA.read_text(encoding="utf-8") == build.render(build.build())


def test_the_set_is_large_varied_and_balanced(items: list[Item]) -> None:
    assert len(items) >= 300
    assert len({i["prompt"] for i in items}) == len(items)
    domains = Counter(i["domain"] for i in items)
    assert set(domains) == {"chat", "code", "math", "extraction", "reasoning"}
    assert min(domains.values()) >= 0.15 * len(items)
    assert 0.4 <= sum(labels_of(items)) / len(items) <= 0.6
    lengths = {
        lab: sorted(len(i["prompt"]) for i in items if i["label"] == lab)
        for lab in ("easy", "hard")
    }
    assert sum(n > 600 for n in lengths["easy"]) >= 20  # long easy prompts
    assert sum(n < 80 for n in lengths["hard"]) >= 15  # short hard prompts


@pytest.mark.parametrize("fold", [0, 1])
def test_held_out_half(
    items: list[Item], features: list[Features], fold: int, capsys: pytest.CaptureFixture[str]
) -> None:
    labels = labels_of(items)
    train, test = halves(items)[fold], halves(items)[1 - fold]
    scores = fit_and_score(features, labels, train, test)
    auc = report(capsys, f"held-out half {fold}", scores, [labels[i] for i in test], 0.5)
    assert auc >= 0.85


def test_templated_to_handwritten_transfer(
    items: list[Item], features: list[Features], capsys: pytest.CaptureFixture[str]
) -> None:
    hand = {prompt for _, _, prompt in HANDWRITTEN}
    labels = labels_of(items)
    train = [n for n, i in enumerate(items) if i["prompt"] not in hand]
    test = [n for n, i in enumerate(items) if i["prompt"] in hand]
    scores = fit_and_score(features, labels, train, test)
    assert (
        report(capsys, "templated -> hand-written", scores, [labels[i] for i in test], 0.5) >= 0.8
    )


def test_shipped_defaults(
    items: list[Item], features: list[Features], capsys: pytest.CaptureFixture[str]
) -> None:
    defaults = DifficultyWeights()
    labels = labels_of(items)
    scores = [score_difficulty(f, defaults).score for f in features]
    assert report(capsys, "shipped defaults, whole set", scores, labels, defaults.threshold) >= 0.85
    assert 0.35 <= positive_share(scores, defaults.threshold) <= 0.65
    for domain in ("chat", "code", "math", "extraction", "reasoning"):
        rows = [n for n, i in enumerate(items) if i["domain"] == domain]
        report(capsys, f"  {domain}", [scores[n] for n in rows], [labels[n] for n in rows], 0.5)


def test_defaults_are_the_fit_on_the_whole_set(features: list[Features], items: list[Item]) -> None:
    bias, vector = fit_logistic([f.values() for f in features], labels_of(items))
    fitted = dict(zip(FEATURE_NAMES, vector, strict=True))
    defaults = DifficultyWeights()
    assert defaults.bias == pytest.approx(bias, abs=0.01)
    for name in FEATURE_NAMES:
        if name in ("output", "depth"):  # constant in the set; set by hand
            assert fitted[name] == pytest.approx(0.0, abs=1e-9)
        else:
            assert getattr(defaults, name) == pytest.approx(fitted[name], abs=0.01), name
    assert len(astuple(defaults)) == len(FEATURE_NAMES) + 2
