"""The learned difficulty model: ranks, scoring, the heuristic fallback, its file format."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from gateway.classify.difficulty import score_difficulty
from gateway.classify.features import FEATURE_NAMES, extract_features
from gateway.classify.model import DifficultyModel, Success, load_model, quantiles, rank

EVEN = tuple(i / 100 for i in range(101))


@pytest.mark.parametrize(
    ("value", "points", "expected"),
    [
        (0.5, EVEN, 0.5),
        (0.255, EVEN, 0.255),
        (-1.0, EVEN, 0.0),
        (2.0, EVEN, 1.0),
        # A run of equal points: the middle of the run.
        (0.2, (0.0, 0.2, 0.2, 0.2, 1.0), 0.5),
        (0.1, (0.0, 0.2, 0.2, 0.2, 1.0), 0.125),
        (0.6, (0.0, 0.2, 0.2, 0.2, 1.0), 0.875),
        (0.0, (0.0, 0.0, 0.0, 0.5, 1.0), 0.25),
    ],
)
def test_rank(value: float, points: tuple[float, ...], expected: float) -> None:
    assert rank(value, points) == pytest.approx(expected)


def _success(bias: float, embedding: list[float], math: float = 0.0) -> Success:
    features = np.asarray([math if name == "math" else 0.0 for name in FEATURE_NAMES])
    return Success(bias, np.asarray(embedding), features)


def _model(large: Success, small: Success, points: tuple[float, ...] = EVEN) -> DifficultyModel:
    # Raw gains lie in [-1, 1]; quantiles spread evenly over them for easy reading.
    gains = tuple(2 * p - 1 for p in points)
    return DifficultyModel(large, small, gains, EVEN)


def test_score_is_the_rank_of_the_expected_gain_and_names_its_reasons() -> None:
    # The large model does well everywhere; the small one only away from direction 0.
    model = _model(_success(5.0, [0.0, 0.0]), _success(0.0, [-5.0, 0.0], math=-5.0))
    features = extract_features("hello", prompt_tokens=5, max_tokens=None, user_turns=1)
    along = model.score(features, np.asarray([1.0, 0.0], dtype=np.float32), threshold=0.8)
    across = model.score(features, np.asarray([0.0, 1.0], dtype=np.float32), threshold=0.8)
    # gain = sigmoid(5) - sigmoid(-5) = 0.9866 ranks (1 + 0.9866) / 2 on these quantiles.
    assert along.score == pytest.approx((1 + 0.98661) / 2, abs=1e-4)
    assert along.hard
    assert along.source == "model"
    assert along.reasons(1) == ("embedding",)
    # gain = sigmoid(5) - sigmoid(0) = 0.4933
    assert across.score == pytest.approx((1 + 0.49331) / 2, abs=1e-4)
    assert not across.hard
    maths = extract_features("Prove the theorem.", prompt_tokens=5, max_tokens=None, user_turns=1)
    assert "math" in model.score(maths, np.zeros(2, dtype=np.float32), 0.5).reasons(2)


def test_fallback_ranks_the_heuristic_score() -> None:
    points = tuple(min(1.0, i / 50) for i in range(101))  # heuristic scores fill [0, 0.5] twice
    model = DifficultyModel(_success(0.0, [0.0]), _success(0.0, [0.0]), EVEN, points)
    heuristic = score_difficulty(
        extract_features("What is 2+2?", prompt_tokens=8, max_tokens=None, user_turns=1)
    )
    ranked = model.fallback(heuristic, threshold=0.5)
    assert ranked.score == pytest.approx(heuristic.score / 2)
    assert ranked.source == "heuristic"
    assert ranked.contributions == heuristic.contributions


def test_wrong_dimension_is_refused() -> None:
    features = extract_features("hi", prompt_tokens=2, max_tokens=None, user_turns=1)
    with pytest.raises(ValueError, match="2-d embeddings"):
        _model(_success(0, [1.0, 0.0]), _success(0, [0.0, 0.0])).score(
            features, np.zeros(3, dtype=np.float32), threshold=0.5
        )


def test_file_round_trip(tmp_path: Path) -> None:
    model = _model(_success(1.0, [0.25, -0.5], math=2.0), _success(-1.0, [0.5, 0.125]))
    path = tmp_path / "m.json"
    path.write_text(json.dumps(model.to_json()))
    again = load_model(path)
    assert again.large.embedding.tolist() == [0.25, -0.5]
    assert again.large.features.tolist() == model.large.features.tolist()
    assert again.small.bias == -1.0
    assert again.quantiles == pytest.approx(model.quantiles)


def test_the_bundled_model_loads() -> None:
    model = load_model()
    assert model.dim == 384
    assert "MMLU" in model.about


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d.update(format="other"), "not a difficulty model file"),
        (lambda d: d["large"]["features"].pop("math"), "feature weights missing"),
        (lambda d: d.update(quantiles=[0.0, 1.0]), "quantiles must be 101"),
        (lambda d: d.update(quantiles=list(reversed(EVEN))), "non-decreasing"),
        (lambda d: d["small"].update(bias=float("nan")), "finite"),
        (lambda d: d["small"].update(embedding=[1.0]), "same embedding size"),
        (lambda d: d.pop("large"), "malformed"),
    ],
)
def test_bad_files_say_what_is_wrong(tmp_path: Path, edit: object, message: str) -> None:
    data = _model(_success(0.0, [0.25, -0.5]), _success(0.0, [0.0, 0.0])).to_json()
    edit(data)  # type: ignore[operator]
    path = tmp_path / "m.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=message):
        load_model(path)


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot read difficulty model"):
        load_model(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ValueError, match="cannot read difficulty model"):
        load_model(tmp_path / "bad.json")


def test_quantiles_of_values() -> None:
    points = quantiles(list(range(11)))
    assert len(points) == 101
    assert points[0] == 0.0
    assert points[50] == 5.0
    assert points[100] == 10.0
