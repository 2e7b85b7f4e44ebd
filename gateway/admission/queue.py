"""The waiting room of one pool: priorities, deadlines and two lanes (short and long prompts).

Requests that cannot get a slot wait here as ``Ticket`` s; the caller pops the next one when a
slot frees. Pure and synchronous; the caller owns the clock and the futures (``payload``).

Dispatch order (``pop``)
    1. The lane. When both lanes hold tickets, a credit counter shares the dispatches: each
       such pop adds ``long_lane_share`` to the long lane's credit; once the credit reaches 1,
       the long lane is served and pays 1, otherwise the short lane is served. So the long
       lane gets exactly ``long_lane_share`` of the dispatches (within one) while both wait,
       the ticket at the head of the long lane leaves within ``ceil(1 / long_lane_share)``
       pops, and one long prompt never holds back more than that many short ones. When only
       one lane holds tickets it is served and the credit stays where it is (credit is not
       banked while a lane is empty; it stays in [0, 1)).
    2. Within the lane: priority (``CRITICAL`` first), then deadline (earliest first, none
       last), then arrival (the ticket's ``arrival``, then the ``seq`` the queue assigns on
       ``push``: FIFO). A request pushed again (one taken back from an engine's queue,
       ``admission/controller.PoolAdmission.readmit``) keeps its deadline and arrival, so it
       goes ahead of those that arrived after it, not behind them.

    The lane comes first, as specified: a long ``SHEDDABLE`` ticket can leave before a short
    ``CRITICAL`` one when it is the long lane's turn. Expired tickets are not skipped by
    ``pop``; call ``expired(now)`` first.

Removal is lazy: ``remove`` and ``expired`` drop a ticket from the books at once (counts,
sums, ``len``), and its heap entries are discarded when they reach the top or when dead
entries outnumber live ones (the heaps are then rebuilt), so each operation is
O(log n) amortised.

``work_ahead(priority, lane)`` estimates the work a new ticket would wait behind
(``count_ahead``: how many tickets; ``ordered()`` lists the waiting ones in dispatch order). Own
lane: every waiting ticket of the same or higher priority (ties on priority counted as ahead,
deadlines ignored: an upper bound). The other lane: while the own lane dispatches those ``n``
tickets and the new one (``n + 1`` pops), the other lane gets about ``(n + 1) * w_other /
w_own`` dispatches (``w_long = long_lane_share``, ``w_short = 1 - w_long``), capped at its
length, each costing the other lane's mean cost; the other lane takes turns whatever the
priority of its tickets.

Parameters
    ``long_lane_share``  share of dispatches the long lane gets while both lanes wait, in
                         (0, 1).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum

# Rebuild the heaps when they hold more than this many entries per live entry (plus slack).
_COMPACT_FACTOR = 2
_COMPACT_SLACK = 64
_EPSILON = 1e-9
# ``head``'s key for a ticket without a deadline: after every clock time, then by arrival.
NO_DEADLINE = 1e12


class Priority(IntEnum):
    CRITICAL = 0
    STANDARD = 1
    SHEDDABLE = 2


class Lane(StrEnum):
    SHORT = "short"
    LONG = "long"


@dataclass(eq=False)
class Ticket:
    """One waiting request. Identity is the object itself (``eq=False``).

    Do not change ``priority``, ``lane``, ``cost`` or ``deadline`` while the ticket waits:
    the queue has filed it under them. ``remove`` it, change it, ``push`` it again.
    """

    priority: Priority
    lane: Lane
    cost: float  # estimated work, e.g. prompt + expected output tokens
    deadline: float | None  # clock time after which the request is worthless
    enqueued_at: float
    payload: object = None  # the caller's, e.g. an asyncio future
    arrival: float = 0.0  # when the request arrived: ties of priority and deadline go by it
    seq: int = field(default=-1, init=False)  # arrival order, assigned by the queue

    def __post_init__(self) -> None:
        if not (math.isfinite(self.cost) and self.cost >= 0.0):
            raise ValueError(f"cost must be a finite number >= 0, got {self.cost}")
        if self.deadline is not None and math.isnan(self.deadline):
            raise ValueError("deadline must be a number or None, got nan")


# (priority, deadline or +inf, arrival, seq, ticket): seq is unique, so tickets are never
# compared.
_LaneEntry = tuple[int, float, float, int, Ticket]
# (deadline, seq, ticket)
_DeadlineEntry = tuple[float, int, Ticket]


def _lane_entry(ticket: Ticket) -> _LaneEntry:
    deadline = math.inf if ticket.deadline is None else ticket.deadline
    return (int(ticket.priority), deadline, ticket.arrival, ticket.seq, ticket)


class AdmissionQueue:
    """Priority queue with two weighted lanes, deadlines and cancellation. Not thread-safe."""

    __slots__ = (
        "_costs",
        "_counts",
        "_credit",
        "_deadlines",
        "_heaps",
        "_live",
        "_long_lane_share",
        "_next_seq",
    )

    def __init__(self, *, long_lane_share: float = 0.25) -> None:
        if not 0.0 < long_lane_share < 1.0:  # also rejects NaN
            raise ValueError(f"long_lane_share must be in (0, 1), got {long_lane_share}")
        self._long_lane_share = long_lane_share
        self._heaps: dict[Lane, list[_LaneEntry]] = {lane: [] for lane in Lane}
        self._deadlines: list[_DeadlineEntry] = []
        self._live: set[Ticket] = set()
        self._counts: dict[tuple[Lane, Priority], int] = {
            (lane, priority): 0 for lane in Lane for priority in Priority
        }
        self._costs: dict[tuple[Lane, Priority], float] = dict.fromkeys(self._counts, 0.0)
        self._credit = 0.0  # the long lane's, in [0, 1)
        self._next_seq = 0

    @property
    def long_lane_share(self) -> float:
        return self._long_lane_share

    def __len__(self) -> int:
        return len(self._live)

    def __contains__(self, ticket: object) -> bool:
        return ticket in self._live

    def push(self, ticket: Ticket) -> None:
        """Add a ticket; it gets the next ``seq``. A ticket may wait only once at a time."""
        if ticket in self._live:
            raise ValueError("ticket is already waiting in this queue")
        ticket.priority = Priority(ticket.priority)
        ticket.lane = Lane(ticket.lane)
        ticket.seq = self._next_seq
        self._next_seq += 1
        self._live.add(ticket)
        self._book(ticket, +1)
        heapq.heappush(self._heaps[ticket.lane], _lane_entry(ticket))
        if ticket.deadline is not None:
            heapq.heappush(self._deadlines, (ticket.deadline, ticket.seq, ticket))

    def pop(self) -> Ticket | None:
        """Remove and return the next ticket to dispatch, or ``None`` when empty."""
        lane = self._choose_lane()
        if lane is None:
            return None
        heap = self._heaps[lane]
        while heap:
            entry = heapq.heappop(heap)
            ticket = entry[4]
            if self._is_current(ticket, entry[3]):
                self._forget(ticket)
                self._maybe_compact()  # its deadline entry is dead now
                return ticket
        raise AssertionError("lane count and heap disagree")  # pragma: no cover

    def remove(self, ticket: Ticket) -> bool:
        """Take a waiting ticket out (a cancelled waiter); ``False`` if it was not waiting."""
        if ticket not in self._live:
            return False
        self._forget(ticket)
        self._maybe_compact()
        return True

    def expired(self, now: float) -> list[Ticket]:
        """Remove and return the tickets whose deadline is ``<= now``, earliest first."""
        out: list[Ticket] = []
        heap = self._deadlines
        while heap and heap[0][0] <= now:
            _, seq, ticket = heapq.heappop(heap)
            if self._is_current(ticket, seq):
                self._forget(ticket)
                out.append(ticket)
        if out:
            self._maybe_compact()
        return out

    def depth(self, lane: Lane | None = None, priority: Priority | None = None) -> int:
        """Waiting tickets, optionally of one lane and/or exactly one priority."""
        return sum(
            count
            for (key_lane, key_priority), count in self._counts.items()
            if (lane is None or key_lane == lane) and (priority is None or key_priority == priority)
        )

    def work(self, lane: Lane | None = None, priority: Priority | None = None) -> float:
        """Summed cost of waiting tickets, optionally of one lane and/or one priority."""
        return sum(
            cost
            for (key_lane, key_priority), cost in self._costs.items()
            if (lane is None or key_lane == lane) and (priority is None or key_priority == priority)
        )

    def work_ahead(self, priority: Priority, lane: Lane) -> float:
        """Estimated cost dispatched before a new ticket of this priority and lane (see module)."""
        return self._ahead(priority, lane)[1]

    def count_ahead(self, priority: Priority, lane: Lane) -> float:
        """Estimated tickets dispatched before a new ticket of this priority and lane."""
        return self._ahead(priority, lane)[0]

    def head(self) -> tuple[int, float] | None:
        """Where the most urgent waiting ticket stands among other queues' (None: nobody
        waits): its priority, then its deadline (one without comes after every deadline,
        by arrival: ``NO_DEADLINE + arrival``). Lanes aside: what the host's workers compare
        to hand a freed slot to the host's first waiter (``host_slots.py``)."""
        tops = [top for lane in Lane if (top := self._top(lane)) is not None]
        if not tops:
            return None
        priority, deadline, arrival, _, _ = min(tops)
        return priority, deadline if math.isfinite(deadline) else NO_DEADLINE + arrival

    def ordered(self) -> list[Ticket]:
        """Every waiting ticket in the order ``pop`` would return them (nothing changes)."""
        lanes = {
            lane: sorted(e for e in heap if self._is_current(e[4], e[3]))
            for lane, heap in self._heaps.items()
        }
        out: list[Ticket] = []
        credit, cursor = self._credit, dict.fromkeys(Lane, 0)
        while len(out) < len(self._live):
            left = {lane: len(entries) - cursor[lane] for lane, entries in lanes.items()}
            if left[Lane.SHORT] and left[Lane.LONG]:
                credit += self._long_lane_share
                lane = Lane.LONG if credit >= 1.0 - _EPSILON else Lane.SHORT
                credit = max(0.0, credit - 1.0) if lane is Lane.LONG else credit
            else:
                lane = Lane.SHORT if left[Lane.SHORT] else Lane.LONG
            out.append(lanes[lane][cursor[lane]][4])
            cursor[lane] += 1
        return out

    # -- internals -----------------------------------------------------------------------

    def _ahead(self, priority: Priority, lane: Lane) -> tuple[float, float]:
        own = [(lane, p) for p in Priority if p <= priority]
        ahead = sum(self._counts[key] for key in own)
        own_work = sum(self._costs[key] for key in own)
        other = Lane.SHORT if lane is Lane.LONG else Lane.LONG
        other_count = self.depth(other)
        if other_count == 0:
            return float(ahead), own_work
        other_turns = min(
            float(other_count), (ahead + 1) * self._weight(other) / self._weight(lane)
        )
        return ahead + other_turns, own_work + self.work(other) / other_count * other_turns

    def _top(self, lane: Lane) -> _LaneEntry | None:
        """The lane's next entry, the dead ones above it dropped."""
        heap = self._heaps[lane]
        while heap and not self._is_current(heap[0][4], heap[0][3]):
            heapq.heappop(heap)
        return heap[0] if heap else None

    def _weight(self, lane: Lane) -> float:
        share = self._long_lane_share
        return share if lane is Lane.LONG else 1.0 - share

    def _choose_lane(self) -> Lane | None:
        short = self.depth(Lane.SHORT) > 0
        long = self.depth(Lane.LONG) > 0
        if not (short and long):
            return Lane.SHORT if short else Lane.LONG if long else None
        self._credit += self._long_lane_share
        if self._credit >= 1.0 - _EPSILON:
            self._credit = max(0.0, self._credit - 1.0)
            return Lane.LONG
        return Lane.SHORT

    def _is_current(self, ticket: Ticket, seq: int) -> bool:
        """Whether a heap entry still stands for a waiting ticket (not removed, not re-pushed)."""
        return ticket.seq == seq and ticket in self._live

    def _book(self, ticket: Ticket, sign: int) -> None:
        key = (ticket.lane, ticket.priority)
        self._counts[key] += sign
        # Reset at zero so float error in the running sum cannot accumulate.
        self._costs[key] = self._costs[key] + sign * ticket.cost if self._counts[key] else 0.0

    def _forget(self, ticket: Ticket) -> None:
        self._live.discard(ticket)
        self._book(ticket, -1)

    def _maybe_compact(self) -> None:
        entries = len(self._deadlines) + sum(len(heap) for heap in self._heaps.values())
        if entries <= _COMPACT_FACTOR * 2 * len(self._live) + _COMPACT_SLACK:
            return
        for heap in self._heaps.values():
            heap[:] = [entry for entry in heap if self._is_current(entry[4], entry[3])]
            heapq.heapify(heap)
        self._deadlines = [e for e in self._deadlines if self._is_current(e[2], e[1])]
        heapq.heapify(self._deadlines)
