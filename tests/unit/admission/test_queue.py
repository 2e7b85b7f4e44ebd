"""AdmissionQueue: ordering tables, lane fairness, removal, expiry, work ahead, and a model."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.admission.queue import AdmissionQueue, Lane, Priority, Ticket

C, S, X = Priority.CRITICAL, Priority.STANDARD, Priority.SHEDDABLE
SHORT, LONG = Lane.SHORT, Lane.LONG


def ticket(
    name: str = "",
    priority: Priority = S,
    lane: Lane = SHORT,
    *,
    deadline: float | None = None,
    cost: float = 1.0,
    at: float = 0.0,
    arrival: float = 0.0,
) -> Ticket:
    return Ticket(priority, lane, cost, deadline, at, payload=name, arrival=arrival)


def drain(queue: AdmissionQueue) -> list[object]:
    names = []
    while (popped := queue.pop()) is not None:
        names.append(popped.payload)
    return names


# -- ordering within a lane ---------------------------------------------------------------

# id -> (tickets pushed in this order as (name, priority, deadline), expected pop order)
ORDER: dict[str, tuple[list[tuple[str, Priority, float | None]], str]] = {
    "fifo": ([("a", S, None), ("b", S, None), ("c", S, None)], "abc"),
    "priority first": ([("x", X, None), ("s", S, None), ("c", C, None)], "csx"),
    "earliest deadline first": ([("a", S, 30.0), ("b", S, 10.0), ("c", S, 20.0)], "bca"),
    "no deadline last": ([("a", S, None), ("b", S, 50.0), ("c", S, None)], "bac"),
    "equal deadlines fifo": ([("a", S, 5.0), ("b", S, 5.0), ("c", S, 5.0)], "abc"),
    "priority beats deadline": ([("a", X, 1.0), ("b", S, None), ("c", C, 99.0)], "cba"),
    "mixed": (
        [
            ("a", S, None),
            ("b", X, 1.0),
            ("c", S, 3.0),
            ("d", C, None),
            ("e", S, 2.0),
            ("f", C, 7.0),
            ("g", X, None),
        ],
        "fdecabg",
    ),
    "empty": ([], ""),
}


@pytest.mark.parametrize("lane", list(Lane))
@pytest.mark.parametrize(("pushed", "expected"), ORDER.values(), ids=ORDER.keys())
def test_order_within_a_lane(
    pushed: list[tuple[str, Priority, float | None]], expected: str, lane: Lane
) -> None:
    queue = AdmissionQueue()
    for name, priority, deadline in pushed:
        queue.push(ticket(name, priority, lane, deadline=deadline))
    assert "".join(str(name) for name in drain(queue)) == expected
    assert queue.pop() is None


def test_seq_is_assigned_in_push_order() -> None:
    queue = AdmissionQueue()
    tickets = [ticket(str(i)) for i in range(3)]
    assert all(t.seq == -1 for t in tickets)
    for t in tickets:
        queue.push(t)
    assert [t.seq for t in tickets] == [0, 1, 2]


# -- lanes ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("share", "pattern"),
    [
        (0.25, "SSSLSSSLSS"),
        (0.5, "SLSLSLSLSL"),
        (0.2, "SSSSLSSSSL"),
        (0.75, "SLLLSLLLSL"),  # the long lane's share can be the larger one
    ],
)
def test_lanes_interleave_by_share(share: float, pattern: str) -> None:
    queue = AdmissionQueue(long_lane_share=share)
    for i in range(8):
        queue.push(ticket(f"S{i}", lane=SHORT))
        queue.push(ticket(f"L{i}", lane=LONG))
    popped = [queue.pop() for _ in range(10)]
    assert "".join("L" if t and t.lane is LONG else "S" for t in popped) == pattern


@pytest.mark.parametrize("share", [0.1, 0.2, 0.25, 0.3, 1 / 3, 0.5, 0.9])
def test_one_long_prompt_leaves_within_one_over_share_pops(share: float) -> None:
    queue = AdmissionQueue(long_lane_share=share)
    for i in range(50):
        queue.push(ticket(f"s{i}", lane=SHORT))
    queue.push(ticket("long", lane=LONG))
    order = drain(queue)
    position = order.index("long") + 1
    assert position <= math.ceil(1 / share - 1e-9)
    # ... and it does not jump the short queue either: about 1/share - 1 short ones go first.
    assert position >= math.floor(1 / share + 1e-9)


def test_long_lane_takes_its_turn_even_over_higher_priority_short() -> None:
    queue = AdmissionQueue(long_lane_share=0.5)
    queue.push(ticket("c1", C, SHORT))
    queue.push(ticket("c2", C, SHORT))
    queue.push(ticket("x", X, LONG))
    assert drain(queue) == ["c1", "x", "c2"]


def test_a_lone_lane_is_served_without_banking_credit() -> None:
    queue = AdmissionQueue(long_lane_share=0.25)
    for i in range(20):
        queue.push(ticket(f"s{i}", lane=SHORT))
    for _ in range(20):
        queue.pop()
    # Twenty short-only pops earned the long lane nothing: the usual pattern follows.
    for i in range(4):
        queue.push(ticket(f"S{i}", lane=SHORT))
        queue.push(ticket(f"L{i}", lane=LONG))
    assert drain(queue)[:4] == ["S0", "S1", "S2", "L0"]


@settings(max_examples=50, deadline=None)
@given(
    share=st.floats(min_value=0.02, max_value=0.98),
    pops=st.integers(min_value=1, max_value=300),
)
def test_long_lane_share_of_dispatches_while_both_wait(share: float, pops: int) -> None:
    queue = AdmissionQueue(long_lane_share=share)
    for i in range(pops):
        queue.push(ticket(f"s{i}", lane=SHORT))
        queue.push(ticket(f"l{i}", lane=LONG))
    longs = 0
    for done in range(1, pops + 1):
        popped = queue.pop()
        assert popped is not None
        longs += popped.lane is LONG
        assert abs(longs - share * done) <= 1.0


@pytest.mark.parametrize("share", [0.0, 1.0, -0.1, 1.5, math.nan])
def test_invalid_share(share: float) -> None:
    with pytest.raises(ValueError, match=r"^long_lane_share must"):
        AdmissionQueue(long_lane_share=share)


# -- push, remove ---------------------------------------------------------------------------


def test_removed_ticket_is_never_popped() -> None:
    queue = AdmissionQueue()
    a, b, c = ticket("a"), ticket("b"), ticket("c")
    for t in (a, b, c):
        queue.push(t)
    assert queue.remove(b) is True
    assert len(queue) == 2
    assert b not in queue
    assert drain(queue) == ["a", "c"]


@pytest.mark.parametrize("how", ["twice", "after pop", "never pushed", "after expiry"])
def test_remove_of_a_ticket_not_waiting_is_false(how: str) -> None:
    queue = AdmissionQueue()
    t = ticket("t", deadline=1.0)
    if how != "never pushed":
        queue.push(t)
    if how == "twice":
        assert queue.remove(t)
    elif how == "after pop":
        assert queue.pop() is t
    elif how == "after expiry":
        assert queue.expired(2.0) == [t]
    assert queue.remove(t) is False
    assert len(queue) == 0


def test_pushing_a_waiting_ticket_again_is_refused() -> None:
    queue = AdmissionQueue()
    t = ticket()
    queue.push(t)
    with pytest.raises(ValueError, match="already waiting"):
        queue.push(t)
    assert len(queue) == 1


# (name, priority, deadline, arrival) pushed in this order -> pop order
AGAIN: dict[str, tuple[list[tuple[str, Priority, float | None, float]], str]] = {
    # A request taken back from an engine is pushed again after later arrivals: its arrival
    # puts it ahead of them (ties of priority and deadline).
    "taken back, no deadlines": (
        [("b", S, None, 2.0), ("c", S, None, 3.0), ("a", S, None, 1.0)],
        "abc",
    ),
    "taken back, equal deadlines": ([("b", S, 9.0, 2.0), ("a", S, 9.0, 1.0)], "ab"),
    # Its deadline (from its original arrival) still comes first; then priority before all.
    "an earlier deadline first": ([("b", S, 5.0, 2.0), ("a", S, 9.0, 1.0)], "ba"),
    "priority first": ([("b", C, None, 2.0), ("a", S, None, 1.0)], "ba"),
    "same arrival: push order": ([("a", S, None, 1.0), ("b", S, None, 1.0)], "ab"),
}


@pytest.mark.parametrize(("pushed", "expected"), AGAIN.values(), ids=AGAIN.keys())
def test_ties_go_by_arrival_then_push_order(
    pushed: list[tuple[str, Priority, float | None, float]], expected: str
) -> None:
    queue = AdmissionQueue()
    for name, priority, deadline, arrival in pushed:
        queue.push(ticket(name, priority, deadline=deadline, arrival=arrival))
    assert [t.payload for t in queue.ordered()] == list(expected)
    assert "".join(str(name) for name in drain(queue)) == expected


def test_a_removed_ticket_pushed_again_goes_to_the_back() -> None:
    queue = AdmissionQueue()
    a, b = ticket("a"), ticket("b")
    queue.push(a)
    queue.push(b)
    queue.remove(a)
    queue.push(a)  # its old heap entry must not bring it back early, nor twice
    assert drain(queue) == ["b", "a"]


def test_many_removals_keep_the_heaps_small() -> None:
    queue = AdmissionQueue()
    keep = ticket("keep", deadline=10.0)
    queue.push(keep)
    for _ in range(1000):
        t = ticket(deadline=5.0)
        queue.push(t)
        queue.remove(t)
    for _ in range(1000):  # popped tickets leave dead deadline entries
        queue.push(ticket(deadline=5.0))
        queue.pop()
    # Reaching into the internals: dead entries are bounded, not one per removal.
    heaps = queue._heaps.values()
    assert sum(len(h) for h in heaps) + len(queue._deadlines) < 200
    assert queue.expired(100.0) == [keep]


# -- counts ----------------------------------------------------------------------------------


def full_queue() -> AdmissionQueue:
    queue = AdmissionQueue(long_lane_share=0.25)
    for priority, lane, cost in [
        (C, SHORT, 10.0),
        (S, SHORT, 20.0),
        (S, SHORT, 30.0),
        (X, SHORT, 40.0),
        (C, LONG, 1000.0),
        (X, LONG, 3000.0),
    ]:
        queue.push(ticket(priority=priority, lane=lane, cost=cost))
    return queue


@pytest.mark.parametrize(
    ("lane", "priority", "depth"),
    [
        (None, None, 6),
        (SHORT, None, 4),
        (LONG, None, 2),
        (None, S, 2),
        (None, C, 2),
        (SHORT, X, 1),
        (LONG, S, 0),
    ],
)
def test_depth(lane: Lane | None, priority: Priority | None, depth: int) -> None:
    queue = full_queue()
    assert queue.depth(lane, priority) == depth
    assert len(queue) == 6


def test_depth_follows_pops_and_removals() -> None:
    queue = full_queue()
    queue.pop()  # the critical short one
    assert queue.depth(SHORT, C) == 0
    assert queue.depth() == len(queue) == 5
    assert queue.work(SHORT) == 90.0


# id -> (priority, lane, expected work ahead) in ``full_queue`` (share 0.25: short 3 : long 1)
WORK_AHEAD: dict[str, tuple[Priority, Lane, float]] = {
    # own: C short (10); 1 + 1 own pops give the long lane 2/3 of a turn at mean cost 2000
    "critical short": (C, SHORT, 10.0 + 2000.0 * 2 / 3),
    # own: 10 + 20 + 30; 3 + 1 own pops -> 4/3 long turns
    "standard short": (S, SHORT, 60.0 + 2000.0 * 4 / 3),
    # own: all four short; 5 own pops -> 5/3 long turns (under the 2 waiting, so uncapped)
    "sheddable short": (X, SHORT, 100.0 + 2000.0 * 5 / 3),
    # own: C long (1000); 2 own pops -> 6 short turns, capped at the 4 waiting (mean 25)
    "critical long": (C, LONG, 1000.0 + 100.0),
    "sheddable long": (X, LONG, 4000.0 + 100.0),
}


@pytest.mark.parametrize(("priority", "lane", "work"), WORK_AHEAD.values(), ids=WORK_AHEAD.keys())
def test_work_ahead(priority: Priority, lane: Lane, work: float) -> None:
    assert full_queue().work_ahead(priority, lane) == pytest.approx(work)


def test_work_ahead_of_an_empty_queue_is_zero() -> None:
    assert AdmissionQueue().work_ahead(X, LONG) == 0.0


def test_work_ahead_with_one_lane_only() -> None:
    queue = AdmissionQueue()
    for cost, priority in [(5.0, C), (7.0, S), (11.0, X)]:
        queue.push(ticket(priority=priority, cost=cost))
    assert queue.work_ahead(S, SHORT) == 12.0
    assert queue.work_ahead(C, LONG) == pytest.approx(23.0 * min(3, 1 * 0.75 / 0.25) / 3)


def test_one_long_prompt_does_not_count_whole_ahead_of_many_short() -> None:
    queue = AdmissionQueue(long_lane_share=0.25)
    for _ in range(100):
        queue.push(ticket(lane=LONG, cost=10_000.0))
    # A short request waits behind at most 1/3 of a long one, not a million tokens.
    assert queue.work_ahead(S, SHORT) == pytest.approx(10_000.0 / 3)


# -- expiry ----------------------------------------------------------------------------------


def test_expired_removes_tickets_at_or_past_their_deadline_earliest_first() -> None:
    queue = AdmissionQueue()
    late, due, early, never, later = (
        ticket("late", deadline=4.0),
        ticket("due", deadline=5.0),
        ticket("early", deadline=1.0),
        ticket("never"),
        ticket("later", deadline=6.0),
    )
    for t in (late, due, early, never, later):
        queue.push(t)
    assert queue.expired(0.5) == []
    assert queue.expired(5.0) == [early, late, due]
    assert len(queue) == 2
    assert queue.expired(5.0) == []
    assert drain(queue) == ["later", "never"]


def test_expired_skips_popped_and_removed_tickets() -> None:
    queue = AdmissionQueue()
    a, b, c = ticket("a", deadline=1.0), ticket("b", deadline=2.0), ticket("c", deadline=3.0)
    for t in (a, b, c):
        queue.push(t)
    assert queue.pop() is a
    queue.remove(b)
    assert queue.expired(10.0) == [c]


def test_expired_ticket_pushed_again_with_a_new_deadline() -> None:
    queue = AdmissionQueue()
    t = ticket("t", deadline=1.0)
    queue.push(t)
    assert queue.expired(1.0) == [t]
    t.deadline = 9.0
    queue.push(t)
    assert queue.expired(5.0) == []
    assert queue.expired(9.0) == [t]


# -- tickets --------------------------------------------------------------------------------

INVALID_TICKETS: dict[str, tuple[dict[str, Any], str]] = {
    "negative cost": ({"cost": -1.0}, "cost"),
    "nan cost": ({"cost": math.nan}, "cost"),
    "infinite cost": ({"cost": math.inf}, "cost"),
    "nan deadline": ({"deadline": math.nan}, "deadline"),
}


@pytest.mark.parametrize(("kwargs", "field"), INVALID_TICKETS.values(), ids=INVALID_TICKETS.keys())
def test_invalid_ticket(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=f"^{field} must"):
        ticket(**kwargs)


def test_tickets_compare_by_identity() -> None:
    assert ticket("a") != ticket("a")


# -- model -----------------------------------------------------------------------------------


class Model:
    """The queue's contract, written plainly: lists and a linear scan."""

    def __init__(self, share: float) -> None:
        self.share = share
        self.credit = 0.0
        self.waiting: list[Ticket] = []

    def pop(self) -> Ticket | None:
        lanes = {t.lane for t in self.waiting}
        if not lanes:
            return None
        if len(lanes) == 2:
            self.credit += self.share
            lane = LONG if self.credit >= 1.0 - 1e-9 else SHORT
            if lane is LONG:
                self.credit = max(0.0, self.credit - 1.0)
        else:
            (lane,) = lanes
        candidates = [t for t in self.waiting if t.lane is lane]
        best = min(
            candidates,
            key=lambda t: (
                t.priority,
                math.inf if t.deadline is None else t.deadline,
                t.arrival,
                t.seq,
            ),
        )
        self.waiting.remove(best)
        return best

    def expired(self, now: float) -> list[Ticket]:
        gone = [t for t in self.waiting if t.deadline is not None and t.deadline <= now]
        gone.sort(key=lambda t: (t.deadline, t.seq))
        self.waiting = [t for t in self.waiting if t not in gone]
        return gone


OPS = st.lists(
    st.one_of(
        st.tuples(
            st.just("push"),
            st.sampled_from(list(Priority)),
            st.sampled_from(list(Lane)),
            st.one_of(st.none(), st.integers(min_value=0, max_value=20).map(float)),
        ),
        st.tuples(st.just("pop")),
        st.tuples(st.just("remove"), st.integers(min_value=0, max_value=1000)),
        st.tuples(st.just("expire"), st.integers(min_value=0, max_value=20).map(float)),
    ),
    max_size=150,
)


@settings(max_examples=150, deadline=None)
@given(share=st.sampled_from([0.1, 0.25, 0.5, 0.8]), ops=OPS)
def test_queue_matches_the_model(share: float, ops: list[tuple[Any, ...]]) -> None:
    queue = AdmissionQueue(long_lane_share=share)
    model = Model(share)
    pushed: list[Ticket] = []
    for op in ops:
        if op[0] == "push":
            _, priority, lane, deadline = op
            t = ticket(priority=priority, lane=lane, deadline=deadline, cost=float(len(pushed)))
            pushed.append(t)
            queue.push(t)
            model.waiting.append(t)
        elif op[0] == "pop":
            assert queue.pop() is model.pop()
        elif op[0] == "remove" and pushed:
            t = pushed[op[1] % len(pushed)]
            waiting = t in model.waiting
            if waiting:
                model.waiting.remove(t)
            assert queue.remove(t) is waiting
        elif op[0] == "expire":
            assert queue.expired(op[1]) == model.expired(op[1])
        assert len(queue) == len(model.waiting)
        for lane in Lane:
            for priority in Priority:
                mine = [t for t in model.waiting if t.lane is lane and t.priority is priority]
                assert queue.depth(lane, priority) == len(mine)
                assert queue.work(lane, priority) == sum(t.cost for t in mine)


@pytest.mark.parametrize("seed", range(5))
def test_ordered_lists_what_pop_would_return(seed: int) -> None:
    rng = random.Random(seed)
    queue = AdmissionQueue(long_lane_share=rng.choice([0.2, 0.25, 0.5]))
    tickets = [
        Ticket(
            priority=rng.choice(list(Priority)),
            lane=rng.choice(list(Lane)),
            cost=rng.uniform(1, 100),
            deadline=rng.choice([None, rng.uniform(0, 10)]),
            enqueued_at=0.0,
        )
        for _ in range(40)
    ]
    for ticket in tickets:
        queue.push(ticket)
    for ticket in rng.sample(tickets, 5):
        queue.remove(ticket)
    queue.pop()  # the lane credit is part of the order
    listed = queue.ordered()
    assert listed == [queue.pop() for _ in range(len(listed))]


def test_count_ahead_counts_what_work_ahead_weighs() -> None:
    queue = AdmissionQueue(long_lane_share=0.25)
    for priority in (Priority.CRITICAL, Priority.STANDARD, Priority.SHEDDABLE):
        queue.push(
            Ticket(priority=priority, lane=Lane.SHORT, cost=10.0, deadline=None, enqueued_at=0.0)
        )
    assert queue.count_ahead(Priority.STANDARD, Lane.SHORT) == 2
    assert queue.work_ahead(Priority.STANDARD, Lane.SHORT) == 20.0
    assert queue.count_ahead(Priority.CRITICAL, Lane.SHORT) == 1


# -- head: the most urgent waiter, as the host's workers compare them -----------------------

# id -> tickets (priority, lane, deadline, arrival) -> head
Waiting = list[tuple[Priority, Lane, float | None, float]]
HEADS: dict[str, tuple[Waiting, tuple[int, float] | None]] = {
    "nobody waits": ([], None),
    "the earliest deadline": ([(S, SHORT, 9.0, 1.0), (S, SHORT, 7.0, 2.0)], (1, 7.0)),
    "priority first, either lane": ([(S, SHORT, 1.0, 0.0), (C, LONG, 9.0, 0.0)], (0, 9.0)),
    "no deadline: after every deadline, by arrival": ([(S, SHORT, None, 3.0)], (1, 1e12 + 3.0)),
}  # fmt: skip


@pytest.mark.parametrize(("tickets", "head"), HEADS.values(), ids=HEADS.keys())
def test_head(tickets: Waiting, head: tuple[int, float] | None) -> None:
    queue = AdmissionQueue()
    for priority, lane, deadline, arrival in tickets:
        queue.push(ticket(priority=priority, lane=lane, deadline=deadline, arrival=arrival))
    assert queue.head() == head


def test_head_skips_tickets_that_left() -> None:
    queue = AdmissionQueue()
    first, second = ticket("a", deadline=1.0), ticket("b", deadline=2.0)
    queue.push(first)
    queue.push(second)
    queue.remove(first)
    assert queue.head() == (1, 2.0)
    assert drain(queue) == ["b"]
