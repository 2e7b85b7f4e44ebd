"""Fitting the learned difficulty model: reading outcomes, fitting, choosing the penalty."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from gateway.classify.fitting.router_fit import (
    Labelled,
    choose_l2,
    columns,
    fit_model,
    gains,
    prompt_features,
    read_outcomes,
)
from gateway.classify.fitting.routing_quality import router_quality


def _write(path: Path, rows: list[object]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        (
            [
                {"prompt": "a", "weak_ok": False, "strong_ok": True},
                "",
                {"prompt": "b", "weak_ok": True, "strong_ok": True, "weight": 2},
            ],
            [Labelled("a", 0.0, 1.0), Labelled("b", 1.0, 1.0, 2.0)],
        ),
        (  # judge scores rescaled by their range in the file (1 to 9 here)
            [
                {"prompt": "a", "weak_score": 5, "strong_score": 9},
                {"prompt": "b", "weak_score": 1, "strong_score": 3.0},
            ],
            [Labelled("a", 0.5, 1.0), Labelled("b", 0.0, 0.25)],
        ),
    ],
)
def test_read_outcomes(tmp_path: Path, rows: list[object], expected: list[Labelled]) -> None:
    assert read_outcomes(_write(tmp_path / "d.jsonl", rows)) == expected


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (["[1, 2]"], ":1: each line must be a JSON object"),
        ([{"weak_ok": True, "strong_ok": True}], ":1: 'prompt' must be a non-empty string"),
        ([{"prompt": "a", "weak_ok": True}], ":1: 'weak_ok' and 'strong_ok'"),
        ([{"prompt": "a", "weak_score": "5", "strong_score": 9}], ":1: need weak_ok"),
        ([{"prompt": "a", "weak_ok": True, "strong_ok": False, "weight": 0}], "'weight'"),
        (["{oops"], ":1:"),
        (
            [
                {"prompt": "a", "weak_ok": True, "strong_ok": False},
                {"prompt": "b", "weak_score": 1, "strong_score": 2},
            ],
            "mixes",
        ),
        ([{"prompt": "a", "weak_score": 3, "strong_score": 3}], "every score is the same"),
        ([""], "no labelled lines"),
    ],
)
def test_bad_outcomes_name_the_line(tmp_path: Path, rows: list[object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        read_outcomes(_write(tmp_path / "d.jsonl", rows))


def _synthetic(n: int, seed: int) -> tuple[list[Labelled], np.ndarray]:
    """The small model fails where the first component is high; the large one rarely."""
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    rows = [
        Labelled(
            f"question {seed}-{i}",
            float(rng.random() < 1 / (1 + np.exp(8 * v[0]))),
            float(rng.random() < 0.95),
        )
        for i, v in enumerate(vectors)
    ]
    return rows, vectors


def test_the_fitted_model_ranks_held_out_prompts_by_gain() -> None:
    train, train_vectors = _synthetic(600, 1)
    test, test_vectors = _synthetic(400, 2)
    model = fit_model(train, train_vectors, l2=1.0, about="synthetic").model
    x = columns(test_vectors, prompt_features([r.prompt for r in test]))
    predicted = gains(model.large, model.small, x)
    quality = router_quality(predicted.tolist(), [r.weak for r in test], [r.strong for r in test])
    assert quality.apgr > 0.7  # random is 0.5
    assert model.small.embedding[0] < -1.0  # it found the direction the small model fails
    assert model.about == "synthetic"
    assert len(model.quantiles) == 101


def test_choose_l2_takes_the_best_cross_validated_apgr() -> None:
    rows, vectors = _synthetic(300, 3)
    best, means = choose_l2(rows, vectors, [0.01, 1.0, 100.0], folds=3)
    assert set(means) == {0.01, 1.0, 100.0}
    assert means[best] == max(means.values())
    assert all(0.6 < apgr < 1.0 for apgr in means.values())  # held out, well above random
    groups = ["a" if i % 4 else "b" for i in range(len(rows))]
    _, by_group = choose_l2(rows, vectors, [1.0], folds=3, groups=groups)
    assert by_group[1.0] != means[1.0]  # each group's APGR counts alike


def test_choose_l2_needs_a_gap_to_recover() -> None:
    rows = [Labelled(f"q{i}", 1.0, 1.0) for i in range(12)]
    with pytest.raises(ValueError, match="no fold where the large model does better"):
        choose_l2(rows, np.eye(12, 4, dtype=np.float32), [1.0])
