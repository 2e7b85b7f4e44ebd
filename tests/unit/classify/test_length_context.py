"""Length classes and the context-window check."""

from __future__ import annotations

import pytest

from gateway.classify.context_fit import check_context
from gateway.classify.length import LengthClass, LengthThresholds, length_class


@pytest.mark.parametrize(
    ("tokens", "expected"),
    [
        (0, LengthClass.SHORT),
        (511, LengthClass.SHORT),
        (512, LengthClass.MEDIUM),
        (4095, LengthClass.MEDIUM),
        (4096, LengthClass.LONG),
        (1_000_000, LengthClass.LONG),
    ],
)
def test_default_thresholds(tokens: int, expected: LengthClass) -> None:
    assert length_class(tokens) is expected


def test_custom_thresholds() -> None:
    thresholds = LengthThresholds(medium_from=10, long_from=20)
    assert [length_class(n, thresholds).value for n in (9, 10, 19, 20)] == [
        "short",
        "medium",
        "medium",
        "long",
    ]


@pytest.mark.parametrize(("medium", "long"), [(100, 100), (200, 100), (0, 10), (-5, 10)])
def test_thresholds_must_increase(medium: int, long: int) -> None:
    with pytest.raises(ValueError, match="must increase"):
        LengthThresholds(medium_from=medium, long_from=long)


def test_request_that_fits() -> None:
    fit = check_context(1000, 500, 8192)
    assert fit.fits
    assert (fit.prompt_tokens, fit.completion_tokens, fit.total_tokens) == (1000, 500, 1500)


def test_exact_boundary_fits() -> None:
    assert check_context(8000, 192, 8192).fits
    assert not check_context(8000, 193, 8192).fits


def test_overflow_message_names_the_numbers() -> None:
    fit = check_context(7000, 2000, 8192)
    assert not fit.fits
    assert fit.message() == (
        "This model's maximum context length is 8192 tokens. However, you requested 9000 "
        "tokens (7000 in the messages, 2000 in the completion). Please reduce the length of "
        "the messages or completion."
    )


def test_default_completion_budget_when_none_requested() -> None:
    fit = check_context(8192, None, 8192)
    assert not fit.fits
    assert fit.completion_tokens == 1
    assert not fit.completion_requested
    assert fit.message().endswith("Please reduce the length of the messages.")
    assert check_context(8000, None, 8192, default_max_tokens=256).completion_tokens == 256


def test_estimated_prompts_get_the_benefit_of_the_doubt() -> None:
    # 9000 estimated tokens might be 7650 real ones with 15% slack: let the backend decide.
    lenient = check_context(9000, 500, 8192, prompt_estimated=True, estimate_slack=0.15)
    assert lenient.fits
    strict = check_context(9000, 500, 8192, prompt_estimated=False, estimate_slack=0.15)
    assert not strict.fits
    over = check_context(12000, 500, 8192, prompt_estimated=True, estimate_slack=0.15)
    assert not over.fits
    assert "about 12500 tokens (about 12000 in the messages" in over.message()


@pytest.mark.parametrize(("limit", "slack"), [(0, 0.0), (100, -0.1), (100, 1.0)])
def test_invalid_arguments(limit: int, slack: float) -> None:
    with pytest.raises(ValueError, match="must be"):
        check_context(10, 10, limit, estimate_slack=slack)


def test_certainty_of_estimated_verdicts() -> None:
    def fit(prompt: int, estimated: bool = True) -> bool:
        return check_context(
            prompt, 192, 8192, prompt_estimated=estimated, estimate_slack=0.1
        ).certain

    assert fit(5000)  # fits even if the estimate is 10% low
    assert not fit(7800)  # fits as estimated, overflows if 10% low: recount
    assert not fit(8500)  # overflows as estimated, fits if 10% high: recount
    assert fit(10000)  # overflows even if 10% high
    assert fit(8500, estimated=False)  # exact counts are always certain
