"""The verifier: its curve, its decision inside the hit rule, its weights file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gateway.cache.judgement.pair_features import FEATURES, Idf
from gateway.cache.judgement.verdict import HitRule, Question, hit_rule, views_table
from gateway.cache.judgement.verifier import Curve, Verifier, load_verifier
from gateway.schema import SemanticCache

CURVE = Curve(
    thresholds=np.array([0.1, 0.3, 0.5, 0.7, 0.9]),
    precision=np.array([0.80, 0.95, 0.985, 0.97, 1.0]),
    recall=np.array([0.9, 0.8, 0.6, 0.4, 0.1]),
)


@pytest.mark.parametrize(
    ("rate", "threshold"),
    [
        (0.25, 0.1),
        (0.05, 0.3),
        (0.04, 0.5),
        (0.02, 0.9),  # 0.5 alone would pass, but a stricter threshold (0.7) is less precise
        (0.01, 0.9),
        (0.001, 0.9),
    ],
)
def test_threshold_for_a_false_hit_rate(rate: float, threshold: float) -> None:
    assert CURVE.threshold_for(rate) == threshold


def test_no_threshold_is_precise_enough_means_no_hit() -> None:
    curve = Curve(np.array([0.2, 0.6]), np.array([0.9, 0.95]), np.array([0.5, 0.2]))
    assert curve.threshold_for(0.01) > 1.0  # a probability never reaches it
    assert curve.at(0.6) == (0.95, 0.2)
    assert curve.at(0.61) == (1.0, 0.0)  # past the last point: nothing is served


def toy_verifier(*, offset: float = 0.9, min_cosine: float = 0.6) -> Verifier:
    """One hidden unit reading the cosine: p = sigmoid(10 tanh(cosine - offset)), about
    0.62 at cosine 0.95 and 0.38 at 0.85 (offset 0.9); thresholds 0.5 (at a false-hit rate
    of 0.015) and 0.7 (at 0.005)."""
    n = len(FEATURES)
    hidden = np.zeros((n, 1))
    hidden[0, 0] = 1.0
    return Verifier(
        hidden=hidden,
        hidden_bias=np.array([-offset]),
        weights=np.array([10.0]),
        bias=0.0,
        mean=np.zeros(n),
        scale=np.ones(n),
        idf=Idf({}, 5.0),
        min_cosine=min_cosine,
        curve=Curve(np.array([0.5, 0.7]), np.array([0.985, 0.995]), np.array([0.6, 0.3])),
        curve_no_guard=Curve(np.array([0.6]), np.array([0.99]), np.array([0.5])),
    )


def _unit(*values: float) -> np.ndarray:
    v = np.array(values, np.float32)
    return v / np.linalg.norm(v)


BASE = _unit(1.0, 0.0, 0.0)


def _at(cosine: float) -> np.ndarray:
    return np.array([cosine, np.sqrt(1 - cosine**2), 0.0], np.float32)


@pytest.mark.parametrize(
    ("settings", "cached", "asked", "cosine", "reason"),
    [
        # verifier at 0.02 (threshold 0.5) and at 0.005 (threshold 0.7, stricter)
        (SemanticCache(max_false_hit_rate=0.02), "reset my password", "reset password", 0.95, None),
        (SemanticCache(max_false_hit_rate=0.02), "reset my password", "reset password", 0.85,
         "verifier"),
        (SemanticCache(max_false_hit_rate=0.005), "reset my password", "reset password", 0.99,
         None),  # p 0.71
        (SemanticCache(max_false_hit_rate=0.005), "reset my password", "reset password", 0.95,
         "verifier"),  # p 0.62: enough at 0.02, not at 0.005
        # below the verifier's min_cosine: refused before scoring
        (SemanticCache(), "reset my password", "reset password", 0.5, "cosine"),
        # the guard vetoes before the verifier, unless turned off
        (SemanticCache(), "Is 8GB enough?", "Is 16GB enough?", 0.99, "number"),
        (SemanticCache(guard=False), "Is 8GB enough?", "Is 16GB enough?", 0.99, None),
        # without the guard, the threshold comes from the other curve (0.6: p 0.5 refused)
        (SemanticCache(guard=False), "reset my password", "reset password", 0.9, "verifier"),
        (SemanticCache(guard=False), "reset my password", "reset password", 0.95, None),
        # the old rule: cosine and guard, no verifier
        (SemanticCache(threshold=0.9), "reset my password", "reset password", 0.91, None),
        (SemanticCache(threshold=0.9), "reset my password", "reset password", 0.89, "cosine"),
        (SemanticCache(threshold=0.9), "turn on the lights", "turn off the lights", 0.95,
         "polarity"),
    ],
)  # fmt: skip
def test_hit_rule(
    settings: SemanticCache, cached: str, asked: str, cosine: float, reason: str | None
) -> None:
    rule = hit_rule(settings, toy_verifier())
    vector = _at(cosine)
    assert rule.refusal(Question(asked, vector), cached, BASE, cosine) == reason


def test_the_rule_without_threshold_needs_a_verifier() -> None:
    with pytest.raises(ValueError, match="needs a verifier"):
        hit_rule(SemanticCache(), None)
    assert hit_rule(SemanticCache(threshold=0.8), None) == HitRule(guard=True, floor=0.8)


def test_weights_file_round_trip(tmp_path: Path) -> None:
    model = toy_verifier()
    model.save(tmp_path / "v.npz")
    loaded = load_verifier(tmp_path / "v.npz")
    np.testing.assert_allclose(loaded.weights, model.weights)
    assert loaded.bias == model.bias
    assert loaded.curve.threshold_for(0.01) == model.curve.threshold_for(0.01)
    asked = Question("reset password", _at(0.95))
    expected = 1 / (1 + np.exp(-10 * np.tanh(0.05)))
    assert loaded.probability(asked.view, asked.view, BASE, asked.vector) == pytest.approx(
        expected, abs=1e-5
    )


def test_a_weights_file_for_other_features_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "v.npz"
    toy_verifier().save(path)
    with np.load(path) as data:
        arrays = dict(data)
    arrays["meta"] = np.frombuffer(b'{"features": ["cosine"]}', np.uint8)
    np.savez(path, **arrays)
    with pytest.raises(ValueError, match="refit"):
        load_verifier(path)


def test_views_of_cached_questions_are_kept_least_recent_out_first() -> None:
    views = views_table(size=2)
    first = views("How do I reset my password?")
    assert views("How do I reset my password?") is first  # kept, not made again
    policy = views("What is your return policy?")
    views("How do I reset my password?")  # now the most recent
    views("Where is my order?")  # evicts the return policy, the least recent
    assert views("How do I reset my password?") is first
    again = views("What is your return policy?")
    assert again is not policy  # made again
    assert again == policy
