"""The prompt sizes asked lately: a switch of prompts against a mix of short and long."""

from __future__ import annotations

import math
import random

import pytest

from gateway.backends.asked import AskedSizes


def _chat(rng: random.Random) -> float:
    """The SLO benchmark's bursty mix: lognormal around 200 tokens, a fifth of 2,000."""
    if rng.random() < 0.2:
        return 2000.0
    return min(1500.0, max(8.0, rng.lognormvariate(math.log(200), 0.9)))


def test_nothing_asked_yet_is_size_zero() -> None:
    assert (AskedSizes().recent, AskedSizes().usual) == (0.0, 0.0)


@pytest.mark.parametrize(
    ("asked", "recent", "usual"),
    [
        ((6000.0,), 6000.0, 6000.0),  # the first request sets both
        ((6000.0, 6000.0, 6000.0), 6000.0, 6000.0),
        ((99.0, 9999.0), 100 * 100**0.3 - 1, 100 * 100**0.02 - 1),  # geometric, in 1 + tokens
        ((-5.0,), 0.0, 0.0),  # nonsense counts as nothing
    ],
)
def test_averages_are_geometric(asked: tuple[float, ...], recent: float, usual: float) -> None:
    sizes = AskedSizes()
    for tokens in asked:
        sizes.add(tokens)
    assert (sizes.recent, sizes.usual) == (pytest.approx(recent), pytest.approx(usual))


def test_a_mix_of_short_and_long_prompts_never_reads_as_a_switch() -> None:
    rng, sizes = random.Random(0), AskedSizes()
    for _ in range(100):
        sizes.add(_chat(rng))
    for _ in range(20_000):
        sizes.add(_chat(rng))
        assert sizes.recent >= 0.2 * sizes.usual


def test_long_prompts_then_short_read_as_a_switch_at_the_second() -> None:
    rng, sizes = random.Random(0), AskedSizes()
    for _ in range(40):
        sizes.add(rng.lognormvariate(math.log(6000), 0.3))
    usual = sizes.usual
    sizes.add(100.0)
    assert sizes.recent >= 0.2 * usual
    sizes.add(100.0)
    assert sizes.recent < 0.2 * usual
