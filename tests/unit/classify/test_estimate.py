"""The fast token estimate: calibration table against cl100k counts, edge cases, speed."""

from __future__ import annotations

import pytest

from gateway.classify.estimate import (
    EstimateCalibration,
    EstimateCounter,
    TextCounts,
    estimate_tokens,
    text_counts,
)
from loadtests.kit.difficulty_set import passages

# cl100k_base token counts of the evaluation set's passages, measured offline with tiktoken.
CL100K = [
    ("LANDLORD_EMAIL", 251),
    ("MEETING_NOTES", 241),
    ("PRODUCT_PAGE", 203),
    ("LIGHTHOUSE_STORY", 198),
    ("BIKE_ARTICLE", 170),
    ("CONTRACT", 225),
    ("PY_AVERAGE", 68),
    ("JS_RENDER", 78),
    ("SQL_REPORT", 61),
    ("JAVA_POINT", 61),
    ("GO_CACHE", 97),
    ("PY_WORKERS", 99),
    ("PY_TRACE", 149),
    ("JAVA_TRACE", 106),
    ("ORDER_JSON", 102),
    ("SERVER_LOG", 226),
    ("SUPPORT_CHAT", 173),
    ("INVOICE_A", 126),
]


@pytest.mark.parametrize(("name", "real"), CL100K)
def test_estimate_is_close_to_cl100k_per_text(name: str, real: int) -> None:
    estimate = estimate_tokens(getattr(passages, name))
    assert abs(estimate - real) <= 0.25 * real


def test_estimate_is_unbiased_over_the_table() -> None:
    real = sum(count for _, count in CL100K)
    estimate = sum(estimate_tokens(getattr(passages, name)) for name, _ in CL100K)
    assert abs(estimate - real) <= 0.05 * real


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", TextCounts(0, 0, 0, 0, 0, 0)),
        ("hello world", TextCounts(10, 2, 0, 0, 0, 0)),
        ("  a(1);\n b", TextCounts(6, 2, 3, 1, 1, 0)),
        ("déjà vu", TextCounts(4, 2, 0, 0, 0, 4)),
        ("\t\n", TextCounts(0, 0, 0, 1, 0, 0)),
    ],
)
def test_text_counts(text: str, expected: TextCounts) -> None:
    assert text_counts(text) == expected


def test_empty_text_is_zero_tokens_and_any_text_at_least_one() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens(" ") == 1
    assert estimate_tokens("a") == 1


def test_more_text_never_costs_fewer_tokens() -> None:
    base = passages.BIKE_ARTICLE
    assert estimate_tokens(base + " " + base) > estimate_tokens(base)


def test_cjk_costs_about_one_token_per_character() -> None:
    text = "人工智能是计算机科学的一个分支" * 4  # 60 characters
    assert 35 <= estimate_tokens(text) <= 80


def test_lone_surrogates_do_not_raise() -> None:
    assert estimate_tokens("bad \ud800 text") >= 2


def test_calibration_is_validated() -> None:
    with pytest.raises(ValueError, match="words"):
        EstimateCalibration(words=-1.0)


def test_counter_uses_its_calibration() -> None:
    doubled = EstimateCounter(calibration=EstimateCalibration(visible=0.2036, words=1.1692))
    plain = EstimateCounter()
    assert not plain.exact
    assert doubled.count("hello there world") > plain.count("hello there world")


def test_estimate_of_a_1000_token_prompt() -> None:
    # Its cost is measured by `python -m loadtests.routing_cost`, not here.
    text = (passages.LIGHTHOUSE_STORY + "\n\n" + passages.BIKE_ARTICLE + "\n\n") * 3
    assert 900 <= estimate_tokens(text) <= 1200
