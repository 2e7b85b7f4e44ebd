"""Each scorer maps its evidence to [0, 1], by tables."""

from __future__ import annotations

import pytest

from gateway.scheduling import scorers

# id -> (matches, loads, guard, scores)
PREFIX = {
    "no match anywhere": ([0.0, 0.0], [0, 0], 8, [0.0, 0.0]),
    "match passes through": ([1.0, 0.4, 0.0], [3, 0, 1], 8, [1.0, 0.4, 0.0]),
    "hot replica loses its credit": ([1.0, 0.4], [9, 0], 8, [0.0, 0.4]),
    "exactly at the guard keeps it": ([1.0, 0.0], [8, 0], 8, [1.0, 0.0]),
    "guard 0: only the least loaded keeps credit": ([1.0, 1.0], [1, 0], 0, [0.0, 1.0]),
    "empty": ([], [], 8, []),
}


@pytest.mark.parametrize(("matches", "loads", "guard", "want"), PREFIX.values(), ids=PREFIX)
def test_prefix(matches: list[float], loads: list[float], guard: int, want: list[float]) -> None:
    assert scorers.prefix_scores(matches, loads, guard) == want


LOADS = {
    "equal loads all score 1": ([2, 2, 2], [1.0, 1.0, 1.0]),
    "least 1, most 0, linear between": ([0, 5, 10], [1.0, 0.5, 0.0]),
    "fractional engine queue": ([0.5, 1.5], [1.0, 0.0]),
    "single": ([7], [1.0]),
    "empty": ([], []),
}


@pytest.mark.parametrize(("loads", "want"), LOADS.values(), ids=LOADS)
def test_queue(loads: list[float], want: list[float]) -> None:
    assert scorers.queue_scores(loads) == want


KV = {
    "free cache": ([0.0, 0.25, 1.0], [1.0, 0.75, 0.0]),
    "out of range clamped": ([-0.5, 1.5], [1.0, 0.0]),
}


@pytest.mark.parametrize(("usages", "want"), KV.values(), ids=KV)
def test_kv(usages: list[float], want: list[float]) -> None:
    assert scorers.kv_scores(usages) == want


LATENCY: dict[str, tuple[list[float | None], list[float]]] = {
    "no measurements": ([None, None], [1.0, 1.0]),
    "fastest 1, slowest 0": ([0.1, 0.3, 0.2], [1.0, 0.0, 0.5]),
    "unmeasured replica is tried": ([0.1, None, 0.5], [1.0, 1.0, 0.0]),
    "one measured": ([0.4, None], [1.0, 1.0]),
}


@pytest.mark.parametrize(("ewmas", "want"), LATENCY.values(), ids=LATENCY)
def test_latency(ewmas: list[float | None], want: list[float]) -> None:
    assert scorers.latency_scores(ewmas) == pytest.approx(want)


SESSION = {
    "sticky replica": (["a", "b", "c"], "b", [0.0, 1.0, 0.0]),
    "unknown session": (["a", "b"], None, [0.0, 0.0]),
    "sticky replica not a candidate": (["a", "b"], "z", [0.0, 0.0]),
}


@pytest.mark.parametrize(("names", "sticky", "want"), SESSION.values(), ids=SESSION)
def test_session(names: list[str], sticky: str | None, want: list[float]) -> None:
    assert scorers.session_scores(names, sticky) == want
