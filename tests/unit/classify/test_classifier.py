"""The classify stage end to end: chat and completions, reasons, config, and its cost."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.classify import (
    ClassifyConfig,
    DifficultyWeights,
    EstimateCounter,
    LengthClass,
    LengthThresholds,
    classify_chat,
    classify_completion,
)
from loadtests.kit.difficulty_set import passages

EASY = [{"role": "user", "content": "What's the capital of Portugal?"}]
HARD = [
    {
        "role": "user",
        "content": "Prove that every continuous function on [0, 1] is bounded, and explain why "
        "each hypothesis is needed, step by step.",
    }
]


def two_thousand_token_request() -> list[dict[str, Any]]:
    document = "\n\n".join(
        [passages.LANDLORD_EMAIL, passages.MEETING_NOTES, passages.BIKE_ARTICLE, passages.CONTRACT]
        * 2
    )
    code = "\n\n".join([passages.PY_WORKERS, passages.GO_CACHE, passages.JS_RENDER])
    return [
        {"role": "system", "content": "You are a careful assistant for an operations team."},
        {
            "role": "user",
            "content": "Review the notes and code below and explain which risks matter most."
            f"\n\n{document}\n\n```\n{code}\n```\n\nAnswer in five bullet points.",
        },
    ]


def test_easy_and_hard_requests() -> None:
    easy = classify_chat(EASY, max_tokens=None)
    hard = classify_chat(HARD, max_tokens=2000)
    assert not easy.hard
    assert hard.hard
    assert easy.length is LengthClass.SHORT
    assert not easy.tokens_exact
    assert easy.difficulty.score < 0.3 < 0.7 < hard.difficulty.score


def test_reason_is_compact_and_header_safe() -> None:
    result = classify_chat(HARD, max_tokens=None)
    reason = result.reason(top=3)
    assert reason.startswith("len=short;diff=0.")
    assert reason.endswith(";top=" + "+".join(result.difficulty.reasons(3)))
    assert "math" in reason
    assert reason.isascii()
    assert " " not in reason
    assert "," not in reason


def test_prompt_tokens_include_the_template_overhead() -> None:
    counter = EstimateCounter()
    result = classify_chat(EASY, max_tokens=None, counter=counter)
    assert result.prompt_tokens == counter.count(EASY[0]["content"]) + 4 + 3


def test_config_changes_the_verdicts() -> None:
    config = ClassifyConfig(
        length=LengthThresholds(medium_from=5, long_from=10),
        weights=DifficultyWeights(threshold=0.01),
    )
    result = classify_chat(EASY, max_tokens=None, config=config)
    assert result.length is LengthClass.LONG
    assert result.hard


def test_depth_and_output_push_the_score_up() -> None:
    turns: list[dict[str, Any]] = []
    for n in range(9):
        turns += [
            {"role": "user", "content": f"and part {n}?"},
            {"role": "assistant", "content": "ok"},
        ]
    single = classify_chat(turns[-2:], max_tokens=None)
    deep = classify_chat(turns, max_tokens=None)
    big = classify_chat(turns[-2:], max_tokens=8192)
    assert deep.features.depth == 1.0
    assert deep.difficulty.score > single.difficulty.score
    assert big.difficulty.score > single.difficulty.score


@pytest.mark.parametrize("prompt", ["Prove that 17 is prime, step by step.", [1, 2, 3], ["a", "b"]])
def test_completions(prompt: object) -> None:
    result = classify_completion(prompt, max_tokens=16)
    assert result.prompt_tokens >= 1
    assert 0.0 <= result.difficulty.score <= 1.0


def test_a_2000_token_request_is_medium() -> None:
    # Its cost is measured by `python -m loadtests.routing_cost`, not here.
    messages = two_thousand_token_request()
    result = classify_chat(messages, max_tokens=512, counter=EstimateCounter())
    assert 1700 <= result.prompt_tokens <= 2400
    assert result.length is LengthClass.MEDIUM
