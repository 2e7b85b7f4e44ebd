"""The request path's fast scoring gives the scores it gave before it was made fast.

Pins: token counts and bundled-model scores computed on main at 5541e48 (before the plan stage
shared one word split and looked terms up by ``map``); main's sums ran in hash order, so its
scores moved by up to ~1e-15 with ``PYTHONHASHSEED``, hence the 1e-12 tolerance. Reference:
the model's raw gain recomputed the plain way (the fitting path's ``window_terms``, a dict
of the vocabulary, numpy sums) on all the evaluation set's prompts.
"""

from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gateway.classify import ClassifyConfig, classify_chat
from gateway.classify.estimate import _long_counts, _short_counts
from gateway.classify.features import (
    _LIST_LINE,
    FeatureConfig,
    Features,
    extract_features,
    scan,
)
from gateway.classify.prompt_format import prompt_format
from gateway.classify.text_model import TextModel, load_text_model
from gateway.classify.text_terms import window, window_terms
from gateway.classify.vocabulary import BULLET_LINE_STARTS, NUMBERED_LINE_STARTS
from loadtests.routing_cost.cli import _requests

EVAL = Path(__file__).parents[2] / "data" / "difficulty_eval.jsonl"


@cache
def _model() -> TextModel:
    return load_text_model()


def _prompts() -> list[str]:
    return [json.loads(line)["prompt"] for line in EVAL.read_text().splitlines() if line]


def _user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


# (messages, max_tokens, prompt tokens, score) on main at 5541e48.
PINS = [
    (_user(_prompts()[0]), None, 25, 0.020972540165660362),
    (_user(_prompts()[1]), None, 13, 0.028672877374721507),
    (_user(_prompts()[2]), None, 205, 0.8695520383888307),
    *[
        (body["messages"], None, tokens, score)
        for body, (tokens, score) in zip(
            _requests().values(),
            [
                (13, 0.04514306262812631),
                (1011, 0.9643372395089618),
                (1458, 0.9908903017332986),
                (207, 0.8529767342895647),
            ],
            strict=True,
        )
    ],
]


@pytest.mark.parametrize(("messages", "max_tokens", "tokens", "score"), PINS)
def test_scores_are_the_ones_main_gave(
    messages: list[dict[str, Any]], max_tokens: int | None, tokens: int, score: float
) -> None:
    found = classify_chat(messages, max_tokens=max_tokens, config=ClassifyConfig(model=_model()))
    assert found.prompt_tokens == tokens
    assert found.difficulty.score == pytest.approx(score, abs=1e-12)


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z))


def _reference_raw(model: TextModel, ask: str, features: Features) -> float:
    text = window(ask)
    index = {t.encode("utf-8", "surrogatepass"): i for i, t in enumerate(model.vocabulary)}
    rows = sorted(index[t] for t in window_terms(text) if t in index)
    x = np.asarray(features.values())
    parts = [model.formats[prompt_format(text)]]
    parts += [] if model.distilled is None else [model.distilled]
    gain = 0.0
    for part in parts:
        large, small = part.large, part.small
        gain += _sigmoid(large.bias + float(large.features @ x + large.terms[rows].sum()))
        gain -= _sigmoid(small.bias + float(small.features @ x + small.terms[rows].sum()))
    return gain


def test_raw_gain_is_the_plain_computation_on_every_evaluation_prompt() -> None:
    model = _model()
    long_ask = "\n\n".join(_prompts()[:40])  # longer than the window: head and tail read
    for ask in [*_prompts(), long_ask, ""]:
        features = extract_features(ask, prompt_tokens=100, max_tokens=None, user_turns=1)
        assert model.raw(ask, features) == pytest.approx(
            _reference_raw(model, ask, features), abs=1e-12
        )


@pytest.mark.parametrize("ask", [_prompts()[2], "\n\n".join(_prompts()[:40]), "Hi", ""])
def test_the_shared_word_split_scores_as_the_models_own(ask: str) -> None:
    model = _model()
    features = extract_features(ask, prompt_tokens=100, max_tokens=None, user_turns=1)
    own = model.score(ask, features, 0.5)
    shared = model.score(ask, features, 0.5, scanned=scan(ask).whole)
    assert own == shared


def test_a_policy_window_unlike_the_models_is_not_shared() -> None:
    ask = "Explain why. " + "filler words here " * 300 + "Prove it."
    config = ClassifyConfig(model=_model(), features=FeatureConfig(scan_head_chars=100))
    found = classify_chat(_user(ask), max_tokens=None, config=config)
    features = extract_features(
        ask,
        prompt_tokens=found.prompt_tokens,
        max_tokens=None,
        user_turns=1,
        config=config.features,
    )
    assert found.difficulty == _model().score(ask, features, config.weights.threshold)


@pytest.mark.parametrize(
    "text",
    [
        "hello world",
        "  a(1);\n b\t\r\x0b\x0cc  ",
        "déjà vu, 人工智能 \ud800 x=2^3",
        "\n\n\n",
        "word",
        " leading and trailing ",
    ],
)
def test_long_and_short_byte_counts_agree(text: str) -> None:
    for times in (1, 3, 2000):
        raw = (text * times).encode("utf-8", "surrogatepass")
        if raw:
            assert _long_counts(raw) == _short_counts(raw)


@pytest.mark.parametrize(
    "text",
    [
        "Steps:\n1. a\n2. b\n3) c\n1) d\n- e\n* f\n• g\n-no\n\n5.x",
        "\n1.\n1.\n1.",
        "no lists here",
        "\n- \n- \n* ",
        "\n1.\n- \n2)\n• \n\n* 3.",
    ],
)
def test_one_scan_counts_line_starts_as_the_sum_of_counts(text: str) -> None:
    lines = _LIST_LINE.findall(text)  # numbered starts in the group, bullets as ""
    assert len(lines) - lines.count("") == sum(map(text.count, NUMBERED_LINE_STARTS))
    assert lines.count("") == sum(map(text.count, BULLET_LINE_STARTS))
