"""The prompt-token count learned from the backends' ``usage``: a table of what it is told
and what it then expects."""

from __future__ import annotations

import math

import pytest

from gateway.backends.token_count import TokenCount


def _taught(pairs: list[tuple[float, float]], times: int = 1) -> TokenCount:
    count = TokenCount()
    for _ in range(times):
        for chars, tokens in pairs:
            count.observe(chars, tokens)
    return count


@pytest.mark.parametrize(
    ("pairs", "times", "chars", "low", "high"),
    [
        # Nothing seen: four characters a token.
        ([], 1, 1000, 250, 250),
        ([], 1, 0, 0, 0),
        # 5 characters a token plus a 20-token chat template, prompts of every length.
        ([(200, 60), (1000, 220), (4000, 820), (10000, 2020)], 25, 2000, 415, 425),
        ([(200, 60), (1000, 220), (4000, 820), (10000, 2020)], 25, 0, 15, 25),
        # Code at 3 characters a token.
        ([(300, 100), (3000, 1000), (9000, 3000)], 25, 6000, 1960, 2040),
        # Only short prompts, all alike: exact where seen...
        ([(400, 110)], 100, 400, 109, 111),
        # ...and the prior's slope beyond (about a quarter of the extra characters).
        ([(400, 110)], 100, 8400, 2060, 2140),
        # One answer is not yet a rule: the prior still weighs.
        ([(1000, 500)], 1, 1000, 300, 420),
    ],
)
def test_estimate(
    pairs: list[tuple[float, float]], times: int, chars: float, low: float, high: float
) -> None:
    assert low <= _taught(pairs, times).estimate(chars) <= high


def test_characters_per_token() -> None:
    assert TokenCount().chars_per_token == 4
    assert _taught([(300, 100), (3000, 1000), (9000, 3000)], 25).chars_per_token == (
        pytest.approx(3, rel=0.01)
    )


def test_it_follows_a_backend_that_changed() -> None:
    count = _taught([(1000, 250), (5000, 1250)], times=200)
    for _ in range(600):  # a new model behind the same URL: 2 characters a token
        count.observe(1000, 500)
        count.observe(5000, 2500)
    assert count.estimate(3000) == pytest.approx(1500, rel=0.02)


@pytest.mark.parametrize(
    ("chars", "tokens"),
    [(1000, 0), (1000, -5), (-1, 10), (math.nan, 10), (1000, math.inf)],
)
def test_nonsense_is_ignored(chars: float, tokens: float) -> None:
    count = TokenCount()
    count.observe(chars, tokens)
    assert count.observed == 0
    assert count.estimate(1000) == 250


def test_an_absurd_fit_is_bounded() -> None:
    count = _taught([(100, 5000)], times=50)  # an image counted as tokens, over and over
    assert count.estimate(100) == 100 + 256
    count = _taught([(10000, 1)], times=50)
    assert count.estimate(10000) == 10000 / 16
