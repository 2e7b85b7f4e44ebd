"""Bound the silences of a stream with one timer at a time, not one per read.

Algorithm: the reader reports each read with ``progress(now, budget_s)`` (two stores and a
comparison, no call into the event loop unless the budget shrank below the armed timer's,
which re-arms it). One loop timer is set for ``last + budget`` (capped by ``deadline``).
When it fires: if a read came since, it is set again for the new ``last + budget``; if not (or
``deadline`` passed), ``on_stall`` runs. ``on_stall`` returns whether it acted (it interrupts a
reader that is waiting); when the reader was busy elsewhere (writing to a slow client) it
returns False and the silence counts from now (past the deadline the timer stops: the
reader checks the deadline itself before each read). A stream read every few milliseconds thus
costs one timer per budget period instead of a timer set and cancelled around every read.

Parameters: ``clock`` (seconds, monotonic; ``deadline`` is on it), ``deadline`` (the whole
exchange's end), ``on_stall``, ``schedule`` (default: the running loop's ``call_later``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol


class Cancellable(Protocol):
    def cancel(self) -> None: ...


# ``loop.call_later``'s shape: run the callback after a delay in seconds.
Schedule = Callable[[float, Callable[[], None]], Cancellable]


class StallTimer:
    __slots__ = ("_budget", "_clock", "_deadline", "_due_at", "_handle", "_last", "_on_stall",
                 "_schedule")  # fmt: skip

    def __init__(
        self,
        clock: Callable[[], float],
        deadline: float,
        on_stall: Callable[[], bool],
        schedule: Schedule | None = None,
    ) -> None:
        self._clock = clock
        self._deadline = deadline
        self._on_stall = on_stall
        self._schedule = schedule or asyncio.get_running_loop().call_later
        self._last = 0.0
        self._budget = 0.0
        self._handle: Cancellable | None = None
        self._due_at = 0.0  # when the armed timer fires

    def start(self, now: float, budget_s: float) -> None:
        """Arm the timer: silence from ``now`` may last ``budget_s`` (and not past the
        deadline)."""
        self._last, self._budget = now, budget_s
        self._arm(now)

    def progress(self, now: float, budget_s: float) -> None:
        """A read came at ``now``; the next silence may last ``budget_s``."""
        self._last, self._budget = now, budget_s
        if now + budget_s < self._due_at and self._handle is not None:
            self._handle.cancel()  # a shorter budget than the armed one (after a first token)
            self._arm(now)

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _due(self) -> float:
        return min(self._last + self._budget, self._deadline)

    def _arm(self, now: float) -> None:
        self._due_at = self._due()
        self._handle = self._schedule(max(0.0, self._due_at - now), self._fire)

    def _fire(self) -> None:
        self._handle = None
        now = self._clock()
        if now < self._due():
            self._arm(now)
        elif self._on_stall():
            return  # the reader is told; it ends the exchange (and cancels nothing here)
        elif now < self._deadline:
            self._last = now  # busy elsewhere: the silence starts now
            self._arm(now)
        # Past the deadline with the reader busy: it checks the deadline before its next read.
