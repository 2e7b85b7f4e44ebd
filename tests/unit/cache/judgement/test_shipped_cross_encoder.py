"""The shipped cross-encoder: small enough, with its provenance and a bound curve, and what it
decides at the default bound on pairs that are in none of the fitted or evaluated sets."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.cache.judgement.cross_encoder import CrossEncoder, CrossEncoderFile, shipped_path
from gateway.cache.judgement.cross_rule import threshold_of
from gateway.schema import SemanticCache


@pytest.fixture(scope="module")
def weights() -> CrossEncoderFile:
    path = shipped_path()
    assert path is not None, "gateway/cache/judgement/cross_encoder.npz is missing"
    return CrossEncoderFile.read(path)


@pytest.fixture(scope="module")
def model(weights: CrossEncoderFile) -> CrossEncoder:
    return CrossEncoder(weights, threads=1)


def test_the_file_is_small_and_says_how_it_was_made(weights: CrossEncoderFile) -> None:
    path = shipped_path()
    assert path is not None
    assert Path(path).stat().st_size <= 25_000_000
    meta = weights.meta
    assert meta["calibration_mix"] == "natural"
    assert meta["qqp_calibration_pairs"] == weights.curve.pairs > 10_000
    assert meta["qqp_fit_pairs"] > 40_000
    assert weights.config["num_hidden_layers"] == meta["layers"] <= 6
    assert 0.5 <= meta["min_cosine"] < 0.9


def test_no_threshold_keeps_the_default_bound_on_qqp(weights: CrossEncoderFile) -> None:
    # On the QQP calibration pairs no threshold's false-hit rate is certainly under 2%: at the
    # default the cross-encoder serves nothing (docs/concepts/caching.md).
    assert threshold_of(SemanticCache(), weights) > 1.0
    assert 0.0 < threshold_of(SemanticCache(max_false_hit_rate=0.2), weights) < 1.0


LOOSE = SemanticCache(max_false_hit_rate=0.2)


@pytest.mark.parametrize(
    ("cached", "asked", "served"),
    [
        ("How do I reset my password?", "How can I reset my password?", True),
        ("How do I cancel my subscription?", "How can I cancel my subscription?", True),
        ("What is the best way to learn guitar?", "How can I learn to play the guitar?", True),
        ("How do I convert liters to cups?", "How do I convert cups to liters?", False),
        ("What does x >= 10 mean?", "What does x <= 10 mean?", False),
        ("What is the capital of slovenia", "What is the capital of slovakia", False),
        ("Who invented the telephone?", "Who invented the television?", False),
    ],
)
def test_known_pairs_at_a_bound_of_one_in_five(
    weights: CrossEncoderFile, model: CrossEncoder, cached: str, asked: str, served: bool
) -> None:
    (p,) = model.score([(cached, asked)])
    assert (p >= threshold_of(LOOSE, weights)) is served
