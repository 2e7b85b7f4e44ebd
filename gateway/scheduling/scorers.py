"""Replica scorers: each turns one kind of evidence into a score in [0, 1] per candidate.

- ``prefix``: the candidate's leading-block match with the prompt (``prefix_index``), zeroed
  for a candidate whose load exceeds the least loaded one's by more than ``imbalance_guard``
  requests, so a hot replica stops attracting its tenants and the load scorers decide.
- ``queue``: load (gateway in-flight plus the engine's own waiting queue) normalised between
  the least (1) and the most (0) loaded candidate; equal loads all score 1.
- ``kv_cache``: free KV cache, ``1 - usage`` as the engine reports it.
- ``latency``: EWMA of the candidate's TTFT normalised like ``queue``; a candidate with no
  measurement yet scores 1, so a new replica gets traffic and a measurement.
- ``session``: 1 for the replica that served the session last, 0 for the others.

Pure functions of plain values, in candidate order.
"""

from __future__ import annotations

from collections.abc import Sequence


def prefix_scores(matches: Sequence[float], loads: Sequence[float], guard: int) -> list[float]:
    if not loads:
        return []
    least = min(loads)
    return [m if load - least <= guard else 0.0 for m, load in zip(matches, loads, strict=True)]


def queue_scores(loads: Sequence[float]) -> list[float]:
    return _lower_is_better(loads)


def kv_scores(usages: Sequence[float]) -> list[float]:
    return [1.0 - min(1.0, max(0.0, u)) for u in usages]


def latency_scores(ewmas: Sequence[float | None]) -> list[float]:
    known = [e for e in ewmas if e is not None]
    if not known:
        return [1.0] * len(ewmas)
    scores = iter(_lower_is_better(known))
    return [1.0 if e is None else next(scores) for e in ewmas]


def session_scores(names: Sequence[str], sticky: str | None) -> list[float]:
    return [1.0 if name == sticky else 0.0 for name in names]


def _lower_is_better(values: Sequence[float]) -> list[float]:
    if not values:
        return []
    low, high = min(values), max(values)
    if high <= low:
        return [1.0] * len(values)
    span = high - low
    return [(high - v) / span for v in values]
