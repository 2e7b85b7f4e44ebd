"""The logistic difficulty score, its reasons, and the weights config."""

from __future__ import annotations

import math
from dataclasses import fields, replace

import pytest

from gateway.classify.difficulty import DifficultyWeights, score_difficulty, weights_from
from gateway.classify.features import FEATURE_NAMES, Features

ZERO = Features(*(0.0 for _ in FEATURE_NAMES))


def test_weight_fields_follow_the_features() -> None:
    names = tuple(f.name for f in fields(DifficultyWeights))
    assert names == ("bias", *FEATURE_NAMES, "threshold")


def test_score_is_the_logistic_of_the_linear_combination() -> None:
    weights = weights_from(-1.0, tuple(0.0 for _ in FEATURE_NAMES), code=2.0, math=4.0)
    features = replace(ZERO, code=0.5, math=0.25)
    result = score_difficulty(features, weights)
    assert result.score == pytest.approx(1 / (1 + math.exp(-(-1.0 + 1.0 + 1.0))))
    assert result.hard
    assert result.contributions[:2] == (("code", 1.0), ("math", 1.0))
    assert result.reasons(1) == ("code",)


def test_reasons_only_name_features_that_pushed_up() -> None:
    result = score_difficulty(replace(ZERO, simple=1.0))
    assert result.reasons() == ()
    assert not result.hard


def test_extreme_logits_do_not_overflow() -> None:
    big = weights_from(-50.0, tuple(50.0 for _ in FEATURE_NAMES))
    assert score_difficulty(ZERO, big).score == pytest.approx(0.0, abs=1e-20)
    ones = Features(*(1.0 for _ in FEATURE_NAMES))
    assert score_difficulty(ones, replace(big, simple=50.0)).score == 1.0


def test_threshold_decides_hard() -> None:
    features = replace(ZERO, reasoning=0.5)
    score = score_difficulty(features).score
    assert score_difficulty(features, DifficultyWeights(threshold=score)).hard
    assert not score_difficulty(features, DifficultyWeights(threshold=score + 1e-9)).hard


@pytest.mark.parametrize(
    "kwargs", [{"threshold": 0.0}, {"threshold": 1.0}, {"code": math.nan}, {"bias": 51.0}]
)
def test_weights_are_validated(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="must"):
        DifficultyWeights(**kwargs)
