"""Difficulty features: each fires on its cues, stays in [0, 1], reads the right text."""

from __future__ import annotations

from dataclasses import fields

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.classify.features import FEATURE_NAMES, FeatureConfig, Features, extract_features
from loadtests.kit.difficulty_set import passages


def feats(ask: str, **kw: int | None) -> Features:
    args: dict[str, int | None] = {"prompt_tokens": 50, "max_tokens": None, "user_turns": 1}
    args.update(kw)
    return extract_features(ask, **args)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("feature", "plain", "cued"),
    [
        ("code", "Tell me about rivers.", "Fix this:\n```python\ndef f(x):\n    return x[0]\n```"),
        ("code", "Tell me about rivers.", passages.PY_TRACE),
        ("math", "Tell me about rivers.", "Prove that $\\sqrt{2}$ is irrational."),
        ("math", "Tell me about rivers.", "Solve x^2 - 5x + 6 = 0 and derive the roots."),
        ("multistep", "Tell me about rivers.", "Explain step by step: first boil, then steep."),
        ("multistep", "Tell me about rivers.", "Do this:\n1. read\n2. sort\n3. write"),
        ("constraints", "Tell me about rivers.", "Write exactly 3 lines, at least one rhyme."),
        ("constraints", "Tell me about rivers.", "Requirements:\n- no loops\n- no recursion"),
        ("reasoning", "Tell me about rivers.", "Why do rivers meander? Justify and compare."),
        ("simple", "Tell me about rivers.", "Translate 'river' into French, one word."),
    ],
)
def test_each_feature_fires_on_its_cues(feature: str, plain: str, cued: str) -> None:
    assert getattr(feats(plain), feature) == 0.0
    assert getattr(feats(cued), feature) > 0.2


def test_shape_features() -> None:
    base = feats("hi")
    assert base.output == 0.0
    assert base.depth == 0.0
    assert feats("hi", max_tokens=256).output == 0.0
    assert 0.4 < feats("hi", max_tokens=1500).output < 0.6
    assert feats("hi", max_tokens=100_000).output == 1.0
    assert feats("hi", user_turns=5).depth == 0.5
    assert feats("hi", prompt_tokens=8192).length == 1.0
    assert feats("hi", prompt_tokens=90).length < feats("hi", prompt_tokens=900).length


def test_quoted_material_does_not_count_as_instruction() -> None:
    ask = "Who attended?\n\n" + passages.MEETING_NOTES  # numbered items inside the notes
    assert feats(ask).multistep == 0.0
    # Without blank lines nothing marks the notes as material: all of it is the request.
    assert feats(ask).ask < feats(ask.replace("\n\n", "\n")).ask


def test_code_in_fences_is_material_for_instructions_but_content_for_code() -> None:
    ask = "Rename the class:\n```java\n" + passages.JAVA_POINT + "\n```"
    f = feats(ask)
    assert f.code > 0.5
    assert f.constraints == 0.0  # 'private final' inside the code is not a requirement


def test_only_a_window_of_long_messages_is_read() -> None:
    middle = "Prove the theorem by induction. " * 200
    ask = "a" * 3000 + middle + "b" * 3000
    assert feats(ask).math == 0.0
    assert feats(middle).math > 0.0


def test_feature_names_follow_the_dataclass() -> None:
    assert tuple(f.name for f in fields(Features)) == FEATURE_NAMES
    assert len(feats("hi").values()) == len(FEATURE_NAMES)


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=3000), st.integers(0, 10**6), st.integers(1, 10**6), st.integers(0, 99))
def test_features_stay_in_unit_range(ask: str, tokens: int, max_tokens: int, turns: int) -> None:
    values = extract_features(ask, prompt_tokens=tokens, max_tokens=max_tokens, user_turns=turns)
    assert all(0.0 <= x <= 1.0 for x in values.values())


@pytest.mark.parametrize(
    "kwargs",
    [
        {"scan_head_chars": 0},
        {"instruction_chars": 0},
        {"length_full_tokens": 1},
        {"output_low_tokens": 9000},
        {"depth_full_turns": 0},
    ],
)
def test_config_is_validated(kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError, match=r"need|must"):
        FeatureConfig(**kwargs)


def test_requirements_in_a_middle_paragraph_count() -> None:
    ask = (
        "Build a small web scraper.\n\nRequirements:\n- must respect robots.txt\n"
        "- at most 2 requests per second\n\n" + passages.BIKE_ARTICLE + "\n\nUse Python."
    )
    assert feats(ask).constraints >= 0.5
