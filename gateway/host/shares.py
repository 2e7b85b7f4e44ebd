"""A worker's figures on the host board, per backend and per pool, and its siblings' sums.

A backend's row cells: what this worker has in flight there, how many of those wait for
their first token, their uncached prompt tokens (``BackendState``'s own counts), and how
many it dropped lately, until when the engine may still show them. A pool's: the admission
slots this worker holds, its queue's length and most urgent waiter (priority, deadline
key), and its arrival and completion rates as (value, when) pairs, which a reader decays
to its own now (``saturation.Rate``: ``value * exp(-(now - at) / tau)``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import AbstractContextManager

from gateway.host.board import Board

Head = tuple[int, float] | None  # a queue's most urgent waiter (priority, deadline key)

# backend cells (DROPPED: how many it dropped lately, which the engine may show until
# DROPPED_UNTIL)
INFLIGHT, PENDING, PENDING_TOKENS, DROPPED, DROPPED_UNTIL = 0, 1, 2, 3, 4
# pool cells
HELD, QUEUED, ARRIVALS, ARRIVALS_AT, COMPLETIONS, COMPLETIONS_AT = 0, 1, 2, 3, 4, 5
HEAD_PRIORITY, HEAD_DEADLINE = 6, 7  # its queue's most urgent waiter, while QUEUED > 0


class BackendShare:
    """One backend's cells (``backends.seams.HostShare``)."""

    __slots__ = ("_board", "_slot")

    def __init__(self, board: Board, backend: str) -> None:
        self._board = board
        self._slot = board.slot(f"b:{backend}")

    def publish(self, inflight: int, pending: int, pending_tokens: float) -> None:
        board, slot = self._board, self._slot
        board.put(slot, INFLIGHT, float(inflight))
        board.put(slot, PENDING, float(pending))
        board.put(slot, PENDING_TOKENS, pending_tokens)

    def inflight(self) -> float:
        return self._board.others(self._slot, INFLIGHT)

    def pending(self) -> float:
        return self._board.others(self._slot, PENDING)

    def pending_tokens(self) -> float:
        return self._board.others(self._slot, PENDING_TOKENS)

    def publish_dropped(self, dropped: int, until: float) -> None:
        self._board.put(self._slot, DROPPED, float(dropped))
        self._board.put(self._slot, DROPPED_UNTIL, until)

    def dropped(self, now: float) -> float:
        """What the siblings dropped there that the engine may still show at ``now``."""
        board, slot = self._board, self._slot
        rows = (r for r in range(board.rows) if r != board.row)
        return sum(
            board.get(r, slot, DROPPED) for r in rows if board.get(r, slot, DROPPED_UNTIL) > now
        )


class PoolShare:
    """One pool's cells (``admission.host_slots.HostSlots``); ``wake`` is called when the
    queue here grows (the worker then watches its siblings' releases)."""

    __slots__ = ("_board", "_queued", "_slot", "_wake")

    def __init__(self, board: Board, pool: str, wake: Callable[[], None] | None = None) -> None:
        self._board = board
        self._slot = board.slot(f"p:{pool}")
        self._wake = wake
        self._queued = 0

    def locked(self) -> AbstractContextManager[None]:
        return self._board.lock()

    def held(self) -> int:
        return round(self._board.others(self._slot, HELD))

    def queued(self) -> int:
        return round(self._board.others(self._slot, QUEUED))

    def publish_held(self, held: int) -> None:
        self._board.put(self._slot, HELD, float(held))

    def publish_queue(self, queued: int, head: Head = None) -> None:
        board, slot = self._board, self._slot
        if head is not None:  # before the count: a reader never takes an old head for new
            board.put(slot, HEAD_PRIORITY, float(head[0]))
            board.put(slot, HEAD_DEADLINE, head[1])
        board.put(slot, QUEUED, float(queued))
        grew, self._queued = queued > self._queued, queued
        if grew and self._wake is not None:
            self._wake()

    def ahead(self, head: Head) -> bool:
        """Whether a sibling's waiter stands before ``head`` (priority, then deadline)."""
        if head is None:
            return False
        board, slot = self._board, self._slot
        for row in range(board.rows):
            if row == board.row or board.get(row, slot, QUEUED) < 0.5:
                continue
            theirs = (board.get(row, slot, HEAD_PRIORITY), board.get(row, slot, HEAD_DEADLINE))
            if theirs < head:
                return True
        return False

    def publish_rates(
        self, arrivals: tuple[float, float], completions: tuple[float, float]
    ) -> None:
        board, slot = self._board, self._slot
        board.put(slot, ARRIVALS, arrivals[0])
        board.put(slot, ARRIVALS_AT, arrivals[1])
        board.put(slot, COMPLETIONS, completions[0])
        board.put(slot, COMPLETIONS_AT, completions[1])

    def rates(self, now: float, tau_s: float) -> tuple[float, float]:
        """The siblings' arrival and completion rates, decayed to ``now``."""
        board, slot = self._board, self._slot
        arrivals = completions = 0.0
        for row in range(board.rows):
            if row == board.row:
                continue
            arrivals += _decayed(
                board.get(row, slot, ARRIVALS), board.get(row, slot, ARRIVALS_AT), now, tau_s
            )
            completions += _decayed(
                board.get(row, slot, COMPLETIONS), board.get(row, slot, COMPLETIONS_AT), now, tau_s
            )
        return arrivals, completions


def _decayed(value: float, at: float, now: float, tau_s: float) -> float:
    if value == 0.0:
        return 0.0
    return value * math.exp(-max(0.0, now - at) / tau_s)
