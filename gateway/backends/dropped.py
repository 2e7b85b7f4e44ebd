"""Requests this worker dropped at a replica (closed before the engine ended them): the
engine may still show them for ``ABORT_SHOWS_S``, so a read taken meanwhile counts them as
this gateway's own, not as others' (``BackendState.others``).

Algorithm: the drop times, oldest first; a count at ``now`` first forgets those older than
``ABORT_SHOWS_S`` (each time is appended and removed once).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

# Its abort takes the engine a step, its gauges a report.
ABORT_SHOWS_S = 1.0


@dataclass
class Dropped:
    times: deque[float] = field(default_factory=deque)

    def add(self, now: float) -> None:
        self.times.append(now)

    def lately(self, now: float) -> int:
        """Those the engine may still show at ``now``."""
        times = self.times
        while times and now - times[0] > ABORT_SHOWS_S:
            times.popleft()
        return len(times)
