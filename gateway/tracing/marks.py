"""Stage marks: when each stage of a request ended, on the gateway's monotonic clock.

The request path only appends ``(stage, time)`` pairs (a list append per stage); turning
them into intervals (``intervals``) and spans happens after the request, and only when
tracing is on. Stages are sequential, so each one starts where the previous one ended (the
first at the request's arrival).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass(slots=True)
class StageMarks:
    ends: list[tuple[str, float]] = field(default_factory=list)

    def mark(self, stage: str, at: float) -> None:
        self.ends.append((stage, at))


def intervals(arrival: float, ends: Sequence[tuple[str, float]]) -> list[tuple[str, float, float]]:
    """``(stage, start, end)`` per mark; a mark earlier than the one before it (a clock
    stepping back in tests, say) gets an empty interval, never a negative one."""
    out: list[tuple[str, float, float]] = []
    start = arrival
    for stage, end in ends:
        end = max(end, start)
        out.append((stage, start, end))
        start = end
    return out
