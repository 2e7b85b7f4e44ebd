"""Comparing a cached answer with the backend's fresh one: pure, table-driven."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.cache.verification.answer_match import answer_text, compare_answers, normalised


@pytest.mark.parametrize(
    ("cached", "fresh", "cosine", "agree", "reason"),
    [
        ("Use the reset link.", "Use the reset link.", None, True, "identical"),
        ("Use the reset link.", "  use the RESET link ", None, True, "identical"),
        ("Take 500 mg every 6 hours.", "Take 250 mg every 6 hours.", 0.99, False, "numbers"),
        ("It opened in 1998.", "It opened in 1998, in May.", 0.95, True, "same_meaning"),
        ("Open Settings, then Security.", "Go to Security in Settings.", 0.93, True,
         "same_meaning"),
        ("Open Settings, then Security.", "Passwords cannot be reset.", 0.41, False,
         "different"),
        ("Open Settings, then Security.", "Go to Security in Settings.", 0.89, False,
         "different"),  # just under the bar
        ("Open Settings, then Security.", "Go to Security in Settings.", None, None,
         "undecided"),  # no embedding to be had: no evidence either way
        ("Take 5 mg.", "Take 10 mg.", None, False, "numbers"),  # told without embeddings
    ],
)  # fmt: skip
def test_compare_answers(
    cached: str, fresh: str, cosine: float | None, agree: bool | None, reason: str
) -> None:
    got = compare_answers(cached, fresh, cosine, min_cosine=0.9)
    assert (got.agree, got.reason, got.cosine) == (agree, reason, cosine)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("  Hello,\n  World!  ", "hello, world"), ('"quoted."', "quoted"), ("", "")],
)
def test_normalised(text: str, expected: str) -> None:
    assert normalised(text) == expected


@pytest.mark.parametrize(
    ("answer", "text"),
    [
        ({"choices": [{"message": {"role": "assistant", "content": "hi"}}]}, "hi"),
        ({"choices": [{"text": "once"}]}, "once"),
        ({"choices": [{"message": {"content": None}}]}, None),
        ({"choices": []}, None),
        ({"choices": ["x"]}, None),
        ({}, None),
    ],
)
def test_answer_text(answer: dict[str, Any], text: str | None) -> None:
    assert answer_text(answer) == text
