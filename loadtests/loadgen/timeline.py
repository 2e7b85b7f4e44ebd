"""Client-side in-flight count over time, from the records of a finished run.

Algorithm: a sweep over +1 at each send and -1 at each completion, sorted by time (a
completion before a send at the same instant, so back-to-back requests do not overlap);
the result is a step function as ``(t_s, in_flight)`` points after each change.
"""

from __future__ import annotations

from collections.abc import Sequence

from loadtests.loadgen.record import RequestRecord


def in_flight_steps(records: Sequence[RequestRecord]) -> list[tuple[float, int]]:
    events = [(r.sent_s, 1) for r in records] + [(r.end_s, -1) for r in records]
    events.sort()
    steps: list[tuple[float, int]] = [(0.0, 0)]
    level = 0
    for t, delta in events:
        level += delta
        steps.append((t, level))
    return steps


def peak_in_flight(records: Sequence[RequestRecord]) -> int:
    return max(level for _, level in in_flight_steps(records))
