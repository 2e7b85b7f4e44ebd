"""Round-robin replica picking with health and capacity filters."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest

from gateway.backends.state import BackendState, Health
from gateway.scheduling.picker import NoBackend, Pick, RoundRobinPicker
from tests.unit.gateway.helpers import state

H, U, X = Health.HEALTHY, Health.UNKNOWN, Health.UNHEALTHY


def _names(picker: RoundRobinPicker, pool: str, replicas: list[BackendState], n: int) -> list[str]:
    names = []
    for _ in range(n):
        pick = picker.pick(pool, replicas)
        assert pick.backend is not None, pick
        assert pick.reason is None
        names.append(pick.backend.name)
    return names


def test_round_robin_over_all_eligible_replicas() -> None:
    replicas = [state("a"), state("b"), state("c")]
    assert _names(RoundRobinPicker(), "small", replicas, 7) == ["a", "b", "c", "a", "b", "c", "a"]


# id -> (health per replica, inflight per replica, names that may be picked)
FILTERS: dict[str, tuple[list[Health], list[int], set[str]]] = {
    "unhealthy skipped": ([H, X, H], [0, 0, 0], {"a", "c"}),
    "saturated skipped": ([H, H, H], [0, 4, 0], {"a", "c"}),
    "over capacity skipped": ([H, H, H], [5, 0, 0], {"b", "c"}),
    "unknown is routable": ([U, X, U], [0, 0, 0], {"a", "c"}),
    "only one left": ([X, H, H], [0, 0, 4], {"b"}),
    "one below the limit is free": ([H, H, H], [3, 4, 4], {"a"}),
}


@pytest.mark.parametrize(("healths", "inflight", "allowed"), FILTERS.values(), ids=FILTERS.keys())
def test_filters_then_round_robin(
    healths: list[Health], inflight: list[int], allowed: set[str]
) -> None:
    replicas = [
        state(name, health=h, inflight=n)
        for name, h, n in zip("abc", healths, inflight, strict=True)
    ]
    picks = _names(RoundRobinPicker(), "small", replicas, 6 * len(allowed))

    counts = Counter(picks)
    assert set(counts) == allowed
    assert all(c == 6 for c in counts.values()), counts  # evenly spread
    # Consecutive picks differ when there is a choice (round-robin, not sticky).
    if len(allowed) > 1:
        assert all(x != y for x, y in itertools.pairwise(picks))


# id -> (health per replica, inflight per replica, reason)
NONE: dict[str, tuple[list[Health], list[int], NoBackend]] = {
    "no replicas": ([], [], NoBackend.NONE_HEALTHY),
    "all unhealthy": ([X, X], [0, 0], NoBackend.NONE_HEALTHY),
    "all unhealthy even when saturated": ([X, X], [4, 4], NoBackend.NONE_HEALTHY),
    "all saturated": ([H, U], [4, 4], NoBackend.ALL_SATURATED),
    "healthy ones saturated, the free one unhealthy": ([H, X], [4, 0], NoBackend.ALL_SATURATED),
}


@pytest.mark.parametrize(("healths", "inflight", "reason"), NONE.values(), ids=NONE.keys())
def test_no_backend_reason(healths: list[Health], inflight: list[int], reason: NoBackend) -> None:
    replicas = [
        state(name, health=h, inflight=n)
        for name, h, n in zip("ab", healths, inflight, strict=False)
    ]
    assert RoundRobinPicker().pick("small", replicas) == Pick(None, reason)


def test_cursors_are_independent_per_pool() -> None:
    small = [state("s1"), state("s2")]
    big = [state("b1", pool="big"), state("b2", pool="big"), state("b3", pool="big")]
    picker = RoundRobinPicker()

    order = [
        ("small", small),
        ("big", big),
        ("big", big),
        ("small", small),
        ("big", big),
        ("big", big),
    ]
    picked = []
    for pool, replicas in order:
        chosen = picker.pick(pool, replicas).backend
        assert chosen is not None
        picked.append(chosen.name)
    assert picked == ["s1", "b1", "b2", "s2", "b3", "b1"]


def test_picker_follows_state_changes_between_picks() -> None:
    a, b = state("a"), state("b")
    picker = RoundRobinPicker()
    assert _names(picker, "small", [a, b], 2) == ["a", "b"]

    b.health = Health.UNHEALTHY
    assert _names(picker, "small", [a, b], 2) == ["a", "a"]

    a.inflight = a.spec.max_inflight
    assert picker.pick("small", [a, b]) == Pick(None, NoBackend.ALL_SATURATED)

    b.health = Health.HEALTHY
    assert _names(picker, "small", [a, b], 2) == ["b", "b"]
