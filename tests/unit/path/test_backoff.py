"""The wait between two attempts in a pool: exponential from ``backoff_initial_s``, plus a
jitter drawn from the injected RNG, capped at ``backoff_max_s``."""

from __future__ import annotations

import random

import pytest

from gateway.path.dispatch import backoff_s
from gateway.schema import Retry


class _Fixed(random.Random):
    """An RNG whose uniform draw is always the top of the range."""

    def uniform(self, a: float, b: float) -> float:
        return b


# id -> (initial, max, jitter, failed attempt, wait)
CASES = {
    "first retry": (0.05, 1.0, 0.0, 1, 0.05),
    "doubles": (0.05, 1.0, 0.0, 2, 0.1),
    "doubles again": (0.05, 1.0, 0.0, 3, 0.2),
    "capped": (0.05, 1.0, 0.0, 10, 1.0),
    "jitter added": (0.05, 1.0, 0.02, 1, 0.07),
    "jitter within the cap": (0.5, 0.6, 0.2, 1, 0.6),
    "no wait at all": (0.0, 0.0, 0.0, 3, 0.0),
}


@pytest.mark.parametrize(
    ("initial", "cap", "jitter", "failed", "wait"), CASES.values(), ids=CASES.keys()
)
def test_backoff(initial: float, cap: float, jitter: float, failed: int, wait: float) -> None:
    retry = Retry(backoff_initial_s=initial, backoff_max_s=cap, jitter_s=jitter)
    assert backoff_s(retry, failed, _Fixed()) == pytest.approx(wait)


def test_jitter_comes_from_the_injected_rng() -> None:
    retry = Retry(backoff_initial_s=0.1, backoff_max_s=10.0, jitter_s=1.0)
    draws = [backoff_s(retry, 1, random.Random(7)) for _ in range(2)]
    assert draws[0] == draws[1]
    assert 0.1 <= draws[0] <= 1.1
