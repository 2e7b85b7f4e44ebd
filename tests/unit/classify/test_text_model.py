"""The text difficulty model: per-format terms, the distilled and embedding parts, its file."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from gateway.classify.features import extract_features
from gateway.classify.text_model import (
    TERM_UNIT,
    TextModel,
    load_text_model,
    read_model_json,
    write_model,
)
from tests.support.text_models import toy_model

# sigmoid(5) - sigmoid(-5): the small model fails where the large one does well.
GAIN = 0.98661


def _score(model: TextModel, ask: str, vector: np.ndarray | None = None) -> tuple[float, str]:
    features = extract_features(ask, prompt_tokens=10, max_tokens=None, user_turns=1)
    found = model.score(ask, features, threshold=0.9, vector=vector)
    return found.score, found.source


@pytest.mark.parametrize(
    ("ask", "expected"),
    [
        ("Tell me about alpha.", (1 + GAIN) / 2),  # free-form: alpha counts
        ("Tell me about beta.", 0.5),  # free-form: beta does not
        ("Now prove it.", (1 + GAIN) / 2),  # a word pair
        ("Which?\nA. alpha\nB. gamma", 0.5),  # multiple choice: alpha does not
        ("Which?\nA. beta\nB. gamma", (1 + GAIN) / 2),  # multiple choice: beta counts
        ("Nothing known here.", 0.5),
    ],
)
def test_the_score_ranks_the_gain_of_the_asks_format(ask: str, expected: float) -> None:
    score, source = _score(toy_model(), ask)
    assert score == pytest.approx(expected, abs=1e-4)
    assert source == "model"


def test_reasons_name_the_words_when_they_push() -> None:
    model = toy_model()
    features = extract_features("alpha", prompt_tokens=1, max_tokens=None, user_turns=1)
    found = model.score("alpha", features, threshold=0.9)
    assert found.hard
    assert found.reasons(1) == ("words",)


def test_the_distilled_part_adds_its_gain_and_the_embedding_part_decides_alone() -> None:
    model = toy_model(distilled=True, embedding=True)
    # Without a vector: text (beta: no gain in free form) + distilled (beta: gain).
    score, source = _score(model, "Tell me about beta.")
    assert score == pytest.approx((1 + GAIN) / 2, abs=1e-4)
    assert source == "model"
    # With a vector, the embedding part alone: along e0 the small model fails...
    e0 = np.asarray([1.0, 0.0], dtype=np.float32)
    score, source = _score(model, "Tell me about beta.", e0)
    assert score == pytest.approx((1 + GAIN) / 2, abs=1e-4)
    assert source == "model+embedding"
    # ... across it, it does well, whatever the words say.
    e1 = np.asarray([0.0, 1.0], dtype=np.float32)
    assert _score(model, "Tell me about alpha.", e1) == (pytest.approx(0.5), "model+embedding")
    features = extract_features("x", prompt_tokens=1, max_tokens=None, user_turns=1)
    assert model.score("x", features, 0.5, e0).reasons(1) == ("embedding",)
    # A vector but no embedding part: the text alone.
    assert _score(toy_model(), "Tell me about beta.", e0) == (pytest.approx(0.5), "model")


def test_the_embedding_must_have_the_parts_size() -> None:
    features = extract_features("x", prompt_tokens=1, max_tokens=None, user_turns=1)
    with pytest.raises(ValueError, match="2-d embeddings"):
        toy_model(embedding=True).score("x", features, 0.5, np.zeros(3, dtype=np.float32))


@pytest.mark.parametrize("name", ["model.json", "model.json.gz"])
def test_the_file_round_trips_plain_or_compressed(tmp_path: Path, name: str) -> None:
    model = toy_model(distilled=True, embedding=True)
    path = tmp_path / name
    write_model(model, path)
    assert (path.read_bytes()[:2] == b"\x1f\x8b") == name.endswith(".gz")
    again = load_text_model(path)
    assert again.vocabulary == model.vocabulary
    assert again.about == "toy"
    e0 = np.asarray([1.0, 0.0], dtype=np.float32)
    for ask in ("alpha", "beta", "Which?\nA. beta\nB. c"):
        for vector in (None, e0):
            assert _score(again, ask, vector) == pytest.approx(_score(model, ask, vector))


def test_term_weights_are_stored_in_units() -> None:
    data = toy_model().to_json()
    assert data["free"]["small"]["terms"] == [round(-10.0 / TERM_UNIT), 0, round(-10.0 / TERM_UNIT)]


def test_the_bundled_model_loads_and_says_what_it_was_fitted_on() -> None:
    model = load_text_model()
    assert "MMLU" in model.about
    assert len(model.vocabulary) > 1000


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(format="other"), "want format"),
        (lambda d: d.pop("free"), "malformed"),
        (lambda d: d.update(vocabulary=["alpha", "alpha", "beta"]), "repeats a term"),
        (lambda d: d.update(vocabulary=["alpha"]), "one weight per vocabulary term"),
        (lambda d: d.update(quantiles=[0.0, 1.0]), "101 non-decreasing"),
        (lambda d: d["choice"]["large"]["features"].pop("math"), "feature weights missing"),
    ],
)
def test_malformed_files_are_refused(tmp_path: Path, change: object, message: str) -> None:
    data = toy_model().to_json()
    change(data)  # type: ignore[operator]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=message):
        load_text_model(path)


def test_unreadable_files_say_so(tmp_path: Path) -> None:
    path = tmp_path / "w.json.gz"
    path.write_bytes(gzip.compress(b"{not json"))
    with pytest.raises(ValueError, match="cannot read difficulty model"):
        read_model_json(path)
    with pytest.raises(ValueError, match="cannot read difficulty model"):
        read_model_json(tmp_path / "absent.json")
