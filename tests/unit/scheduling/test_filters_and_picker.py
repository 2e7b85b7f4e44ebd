"""Filters (health, breaker, tried, capacity) and the best-score picker with seeded ties."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from gateway.backends.state import Health
from gateway.scheduling.picker import NoBackend, best, eligible
from tests.unit.gateway.helpers import state

H, U, X = Health.HEALTHY, Health.UNKNOWN, Health.UNHEALTHY

# id -> (health per replica, inflight per replica (max 4), excluded, names left or reason)
FILTERS: dict[str, tuple[list[Health], list[int], set[str], set[str] | NoBackend]] = {
    "all pass": ([H, H, H], [0, 0, 0], set(), {"a", "b", "c"}),
    "unhealthy dropped": ([H, X, H], [0, 0, 0], set(), {"a", "c"}),
    "saturated dropped": ([H, H, H], [0, 4, 0], set(), {"a", "c"}),
    "over capacity dropped": ([H, H, H], [5, 0, 0], set(), {"b", "c"}),
    "unknown is routable": ([U, X, U], [0, 0, 0], set(), {"a", "c"}),
    "tried dropped": ([H, H, H], [0, 0, 0], {"a", "b"}, {"c"}),
    "no replicas": ([], [], set(), NoBackend.NONE_HEALTHY),
    "all unhealthy": ([X, X, X], [0, 0, 0], set(), NoBackend.NONE_HEALTHY),
    "all tried": ([H, H, H], [0, 0, 0], {"a", "b", "c"}, NoBackend.NONE_HEALTHY),
    "unhealthy even when saturated": ([X, X, X], [4, 4, 4], set(), NoBackend.NONE_HEALTHY),
    "all saturated": ([H, U, H], [4, 4, 4], set(), NoBackend.ALL_SATURATED),
    "free one unhealthy": ([H, X, H], [4, 0, 4], set(), NoBackend.ALL_SATURATED),
}


@pytest.mark.parametrize(("healths", "inflight", "tried", "left"), FILTERS.values(), ids=FILTERS)
def test_filters(
    healths: list[Health], inflight: list[int], tried: set[str], left: set[str] | NoBackend
) -> None:
    replicas = [
        state(n, health=h, inflight=i) for n, h, i in zip("abc", healths, inflight, strict=False)
    ]
    got = eligible(replicas, tried)
    assert (got if isinstance(got, NoBackend) else {r.name for r in got}) == left


def test_open_breaker_is_filtered() -> None:
    a, b = state("a"), state("b")
    for _ in range(20):
        a.breaker.on_start()
        a.breaker.on_failure()
    got = eligible([a, b])
    assert not isinstance(got, NoBackend)
    assert [r.name for r in got] == ["b"]


# id -> (totals, indices that may win)
BEST: dict[str, tuple[list[float], set[int]]] = {
    "single": ([0.3], {0}),
    "clear winner": ([0.1, 2.5, 1.0], {1}),
    "two tied at the top": ([3.0, 1.0, 3.0], {0, 2}),
    "within tie tolerance": ([1.0, 1.0 + 1e-12, 0.0], {0, 1}),
    "all equal": ([0.0, 0.0, 0.0, 0.0], {0, 1, 2, 3}),
}


@pytest.mark.parametrize(("totals", "winners"), BEST.values(), ids=BEST)
def test_best_takes_the_top_and_draws_ties(totals: list[float], winners: set[int]) -> None:
    rng = random.Random(7)
    seen = Counter(best(totals, rng) for _ in range(400))
    assert set(seen) == winners
    if len(winners) > 1:  # a fair-ish draw among the tied
        assert min(seen.values()) > 400 / len(winners) / 2


def test_seeded_ties_are_reproducible() -> None:
    draws = [[best([1.0, 1.0, 1.0], random.Random(seed)) for _ in range(1)] for seed in (3, 3)]
    assert draws[0] == draws[1]
    first = random.Random(11)
    second = random.Random(11)
    assert [best([0, 0, 0], first) for _ in range(50)] == [
        best([0, 0, 0], second) for _ in range(50)
    ]
