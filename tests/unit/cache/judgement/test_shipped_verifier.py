"""The shipped verifier weights load, give a threshold, and decide known pairs (real model).

The pairs are none of the fitted or evaluated ones (``loadtests/cache_quality``); they pin
what the shipped weights do at ``max_false_hit_rate: 0.1`` (its default before issue 35; at
the default 0.02 no threshold of its curve is precise enough: no semantic hit).
"""

from __future__ import annotations

import numpy as np
import pytest

from gateway.cache.judgement.verdict import HitRule, Question, hit_rule
from gateway.cache.judgement.verifier import load_verifier
from gateway.embedding import SentenceEncoder
from gateway.schema import SemanticCache


@pytest.fixture(scope="module")
def encoder() -> SentenceEncoder:
    return SentenceEncoder(threads=1)


FEATURES = SemanticCache(verifier="features", max_false_hit_rate=0.1)


@pytest.fixture(scope="module")
def rule() -> HitRule:
    return hit_rule(FEATURES, load_verifier())


def test_the_shipped_weights_load_with_their_provenance() -> None:
    verifier = load_verifier()
    assert verifier.meta["qqp_fit_pairs"] >= 10_000
    assert verifier.meta["calibration_mix"] == "natural"
    assert 0.5 <= verifier.min_cosine < 0.9
    threshold = verifier.curve.threshold_for(FEATURES.max_false_hit_rate)
    assert 0.0 < threshold < 1.0
    precision, recall = verifier.curve.at(threshold)
    assert precision >= 1 - FEATURES.max_false_hit_rate
    assert recall > 0.1
    assert verifier.curve.threshold_for(SemanticCache().max_false_hit_rate) > 1.0


@pytest.mark.parametrize(
    ("cached", "asked", "reason"),
    [
        ("How do I reset my password?", "How can I reset my password?", None),
        ("How do I cancel my subscription?", "How can I cancel my subscription?", None),
        ("How long should I boil pasta?", "How long do I need to boil pasta?", None),
        ("How do I convert liters to cups?", "How do I convert cups to liters?", "verifier"),
        ("What does x >= 10 mean?", "What does x <= 10 mean?", "verifier"),
        ("What is the capital of slovenia", "What is the capital of slovakia", "verifier"),
        ("How do I reset my password?", "How do I not reset my password?", "negation"),
        ("What are the pros of solar panels?", "What are the cons of solar panels?", "polarity"),
    ],
)
def test_known_pairs(
    encoder: SentenceEncoder, rule: HitRule, cached: str, asked: str, reason: str | None
) -> None:
    va, vb = encoder.encode([cached, asked])
    cosine = float(np.dot(va, vb))
    assert rule.refusal(Question(asked, vb), cached, va, cosine) == reason
