"""BackendRegistry: state kept across reloads by name and URL; pool readiness."""

from __future__ import annotations

import pytest

from gateway.backends.registry import BackendRegistry
from gateway.backends.scrape import Load
from gateway.backends.state import BackendState, Health
from gateway.policy.compile import UNBOUNDED, CompiledPolicy
from tests.unit.gateway.helpers import policy

BEFORE = """
backends:
  - {name: a, url: http://127.0.0.1:8001, model: m, pool: small, max_inflight: 4}
  - {name: b, url: http://127.0.0.1:8002, model: m, pool: big}
models:
  fast: {pool: small}
  smart: {pool: big}
"""


# The same with backend "a" an engine whose metrics are read.
VLLM = BEFORE.replace("pool: small, max_inflight: 4", "pool: small, engine: vllm, max_inflight: 4")


def test_an_engine_without_metrics_is_capped_by_the_policy_alone() -> None:
    from gateway.backends.load_watch import fold_load

    _, state = _registry()  # engine: openai
    fold_load(state, Load(running=1), 0.0)
    assert (state.dispatch_cap, state.probing) == (4, False)
    _, state = _registry(BEFORE.replace("max_inflight: 4", "engine: openai"))
    assert state.dispatch_cap == UNBOUNDED


def test_a_first_token_in_line_raises_the_probe_and_a_full_read_ends_it() -> None:
    from gateway.backends.load_watch import fold_load

    _, state = _registry(VLLM.replace(", max_inflight: 4", ""))
    fold_load(state, Load(running=4), 0.0)
    assert (state.dispatch_cap, state.probing) == (8, True)
    state.first_token_in_line(8.0)  # eight at once, every first token on time
    assert state.dispatch_cap == 16
    fold_load(state, Load(running=10, waiting=3), 1.0)  # ran its most, others waiting
    assert (state.dispatch_cap, state.probing) == (13, False)  # and a quarter more


# id -> (reads a second apart, whether eight went at once with first tokens in line) ->
# (dispatch cap, what it has shown it runs at once)
SHOWN: dict[str, tuple[list[Load], bool, tuple[int, int]]] = {
    "no read yet: the policy's cap": ([], False, (64, 64)),
    "seen running 4: probed to 8, 4 shown": ([Load(running=4)], False, (8, 4)),
    "8 in flight in line: probed to 16, 8 shown": ([Load(running=4)], True, (16, 8)),
    "a full batch read: its limit, and a quarter more": (
        [Load(running=6, waiting=2)], False, (8, 8)),
    "confirmed by two more, each with that cap filled": (
        [Load(running=6, waiting=2)] * 3, False, (6, 6)),
}  # fmt: skip


@pytest.mark.parametrize(("reads", "in_line", "caps"), SHOWN.values(), ids=SHOWN.keys())
def test_what_an_engine_has_shown_it_runs_at_once(
    reads: list[Load], in_line: bool, caps: tuple[int, int]
) -> None:
    from gateway.backends.load_watch import fold_load

    _, state = _registry(VLLM.replace("max_inflight: 4", "max_inflight: 64"))
    for second, load in enumerate(reads):
        fold_load(state, load, float(second))
    if in_line:
        state.first_token_in_line(8.0)
    assert (state.dispatch_cap, state.slots_shown) == caps


def _registry(text: str = BEFORE) -> tuple[BackendRegistry, BackendState]:
    registry = BackendRegistry()
    registry.reconcile(policy(text))
    a = registry.get("a")
    assert a is not None
    a.inflight, a.health, a.failures, a.successes = 3, Health.HEALTHY, 0, 5
    return registry, a


# id -> (edit of BEFORE, is backend "a"'s state kept?)
EDITS: dict[str, tuple[tuple[str, str], bool]] = {
    "unchanged": (("", ""), True),
    "max_inflight changed": (("max_inflight: 4", "max_inflight: 9"), True),
    "engine added": (("pool: small,", "pool: small, engine: vllm,"), True),
    "served model changed": (("model: m, pool: small", "model: m2, pool: small"), True),
    "trailing slash only": (("8001,", "8001/,"), True),
    "url changed": (("8001", "8101"), False),
    "url scheme changed": (("http://127.0.0.1:8001", "https://127.0.0.1:8001"), False),
}


@pytest.mark.parametrize(("edit", "kept"), EDITS.values(), ids=EDITS.keys())
def test_reconcile_keeps_state_only_for_same_name_and_url(
    edit: tuple[str, str], kept: bool
) -> None:
    registry, a = _registry()
    new_text = BEFORE.replace(*edit)
    assert (new_text != BEFORE) == bool(edit[0])
    new_policy = policy(new_text)

    registry.reconcile(new_policy)

    after = registry.get("a")
    assert after is not None
    new_spec = next(s for s in new_policy.backends if s.name == "a")
    assert after.spec == new_spec
    if kept:
        assert after is a
        assert (after.inflight, after.health, after.successes) == (3, Health.HEALTHY, 5)
    else:
        assert after is not a
        assert (after.inflight, after.health, after.failures, after.successes) == (
            0,
            Health.UNKNOWN,
            0,
            0,
        )


def test_pool_move_keeps_state_and_follows_the_new_pool() -> None:
    registry, a = _registry()
    moved = policy(
        BEFORE.replace("model: m, pool: small", "model: m, pool: big").replace(
            "fast: {pool: small}", "fast: {pool: big}"
        )
    )

    registry.reconcile(moved)

    assert registry.get("a") is a
    assert a.spec.pool == "big"
    assert [s.name for s in registry.in_pool(moved, "big")] == ["a", "b"]


def test_a_pools_replicas_share_its_asked_sizes_kept_across_a_reload() -> None:
    registry, a = _registry()
    big = registry.asked("big")
    assert big is not None
    assert registry.asked("small") is a.asked
    big.add(6000.0)
    moved = policy(
        BEFORE.replace("model: m, pool: small", "model: m, pool: big").replace(
            "fast: {pool: small}", "fast: {pool: big}"
        )
    )

    registry.reconcile(moved)  # "a" joins "big": one record for both, the one kept

    b = registry.get("b")
    assert b is not None
    assert a.asked is b.asked is registry.asked("big") is big
    assert big.usual == pytest.approx(6000.0)
    assert registry.asked("small") is None  # no such pool any more


def test_removed_backend_is_dropped() -> None:
    registry, _ = _registry()
    without_a = policy(
        """
        backends:
          - {name: b, url: http://127.0.0.1:8002, model: m, pool: big}
        models:
          smart: {pool: big}
        """
    )

    registry.reconcile(without_a)

    assert registry.get("a") is None
    assert [s.name for s in registry.all()] == ["b"]


def test_renamed_backend_starts_fresh() -> None:
    registry, a = _registry()
    registry.reconcile(policy(BEFORE.replace("name: a,", "name: a2,")))

    assert registry.get("a") is None
    renamed = registry.get("a2")
    assert renamed is not None
    assert renamed is not a
    assert (renamed.inflight, renamed.health) == (0, Health.UNKNOWN)


def test_removed_then_re_added_backend_starts_fresh() -> None:
    registry, a = _registry()
    registry.reconcile(policy(BEFORE.replace("name: a,", "name: a2,")))
    registry.reconcile(policy(BEFORE))

    again = registry.get("a")
    assert again is not None
    assert again is not a
    assert again.inflight == 0


def test_all_is_a_snapshot() -> None:
    registry, _ = _registry()
    snapshot = registry.all()
    registry.reconcile(policy(BEFORE.replace("name: a,", "name: a2,")))
    assert [s.name for s in snapshot] == ["a", "b"]


TWO_POOLS = """
backends:
  - {name: s1, url: http://127.0.0.1:1, model: m, pool: small}
  - {name: s2, url: http://127.0.0.1:2, model: m, pool: small}
  - {name: b1, url: http://127.0.0.1:3, model: m, pool: big}
models:
  fast: {pool: small}
"""

# id -> (health by backend, expected readiness by pool)
READY: dict[str, tuple[dict[str, Health], dict[str, bool]]] = {
    "all unknown": ({}, {"small": False, "big": False}),
    "one healthy replica makes the pool ready": (
        {"s2": Health.HEALTHY},
        {"small": True, "big": False},
    ),
    "unhealthy is not ready": (
        {"s1": Health.UNHEALTHY, "s2": Health.UNHEALTHY, "b1": Health.HEALTHY},
        {"small": False, "big": True},
    ),
    "mixed": (
        {"s1": Health.UNHEALTHY, "s2": Health.HEALTHY, "b1": Health.UNHEALTHY},
        {"small": True, "big": False},
    ),
}


@pytest.mark.parametrize(("healths", "ready"), READY.values(), ids=READY.keys())
def test_pool_ready(healths: dict[str, Health], ready: dict[str, bool]) -> None:
    compiled: CompiledPolicy = policy(TWO_POOLS)
    registry = BackendRegistry()
    registry.reconcile(compiled)
    for name, health in healths.items():
        backend = registry.get(name)
        assert backend is not None
        backend.health = health

    assert dict(registry.pool_ready(compiled)) == ready
    assert [s.name for s in registry.in_pool(compiled, "small")] == ["s1", "s2"]


# (its batch shown limited, report fresh, in flight, most seen running, reported waiting)
# -> requests predicted queued inside the engine
QUEUED: dict[str, tuple[bool, bool, int, float, float, float]] = {
    "beyond its known batch: queued inside it": (True, True, 10, 4.0, 0.0, 6.0),
    "within its known batch": (True, True, 3, 4.0, 0.0, 0.0),
    "no limit shown, fresh report of none: none, however many went": (
        False, True, 10, 4.0, 0.0, 0.0),
    "no limit shown, other clients queue there (fresh report)": (
        False, True, 3, 4.0, 5.0, 5.0),
    "never saw it run anything: only the report says": (False, True, 10, 0.0, 2.0, 2.0),
    "a stale report is not believed": (False, False, 3, 4.0, 5.0, 0.0),
}  # fmt: skip


@pytest.mark.parametrize(
    ("limited", "fresh", "inflight", "slots_seen", "scraped_waiting", "queued"),
    QUEUED.values(),
    ids=QUEUED.keys(),
)
def test_the_engine_queue_feature(
    limited: bool,
    fresh: bool,
    inflight: int,
    slots_seen: float,
    scraped_waiting: float,
    queued: float,
) -> None:
    _, state = _registry()
    state.inflight, state.slots_seen, state.batch_limited = inflight, slots_seen, limited
    state.load = Load(waiting=scraped_waiting)
    state.read_at, state.fresh_s = state.clock() - 1.0, 2.0 if fresh else 0.5
    assert state.ttft_features(100.0).engine_waiting == queued
    assert state.reports_waiting is (fresh and scraped_waiting > 0)


# (scraped reads in order, max_inflight) -> the dispatch cap after them
CAPS: dict[str, tuple[list[Load], int, int]] = {
    "never read: max_inflight": ([], 64, 64),
    "running, nobody waiting: probed past what it ran, at least PROBE_MIN": (
        [Load(running=3)],
        64,
        8,
    ),
    "running many, nobody waiting: probed at twice that": ([Load(running=20)], 64, 40),
    "a probe never passes max_inflight": ([Load(running=40)], 64, 64),
    "waiting while it ran fewer than its most: a moment, not its batch": (
        [Load(running=6), Load(running=3, waiting=1)],
        64,
        12,
    ),
    "one full read: one more may go, to find out": ([Load(running=4, waiting=2)], 64, 5),
    "two more full reads, each with its cap filled: confirmed": (
        [Load(running=4, waiting=2)] * 3,
        64,
        4,
    ),
    "full reads with its cap not filled: arrivals between steps, not confirmed": (
        [Load(running=4, waiting=2), Load(running=4, waiting=0), Load(running=4, waiting=1)],
        64,
        5,
    ),
    "it ran the probe, nothing waiting: it has room, probed again from what it ran": (
        [Load(running=3, waiting=1), Load(running=4)],
        64,
        8,
    ),
    "it ran the probe, still waiting: its batch is larger, one beyond that": (
        [Load(running=3, waiting=1), Load(running=4, waiting=1)],
        64,
        5,
    ),
    "one full read of the larger size: still probing": (
        [Load(running=3, waiting=1), Load(running=4), Load(running=4, waiting=1)],
        64,
        5,
    ),
    "the larger size confirmed": (
        [Load(running=3, waiting=1), Load(running=4)] + [Load(running=4, waiting=1)] * 3,
        64,
        4,
    ),
    "waiting because KV is full: not the batch, still probed": (
        [Load(running=2, waiting=5, kv_usage=0.95)],
        64,
        8,
    ),
    "max_inflight stays the hard limit": ([Load(running=8, waiting=1)] * 2, 5, 5),
    "a queue but nothing running (starting up)": ([Load(running=0, waiting=3)], 64, 8),
}


@pytest.mark.parametrize(("reads", "max_inflight", "cap"), CAPS.values(), ids=CAPS.keys())
def test_the_dispatch_cap_is_learned_from_a_full_batch(
    reads: list[Load], max_inflight: int, cap: int
) -> None:
    from gateway.backends.load_watch import fold_load

    _, state = _registry(VLLM.replace("max_inflight: 4", f"max_inflight: {max_inflight}"))
    for second, load in enumerate(reads):
        fold_load(state, load, float(second))  # the scrape interval: a second apart
    assert state.dispatch_cap == cap
    state.inflight = cap - 1
    assert state.has_capacity
    state.inflight = cap
    assert not state.has_capacity


def test_once_capped_a_stale_scraped_queue_is_not_the_engines_queue() -> None:
    from gateway.backends.load_watch import fold_load

    _, state = _registry()
    fold_load(state, Load(running=4, waiting=3), 0.0)  # our own overflow, before the cap
    state.inflight = 4
    assert state.ttft_features(100.0).engine_waiting == 0.0
    state.inflight = 6  # sent before the cap was known: two queue inside
    assert state.ttft_features(100.0).engine_waiting == 2.0


def test_a_request_waiting_for_a_slot_is_predicted_at_the_next_free_one() -> None:
    from gateway.backends.load_watch import fold_load

    _, state = _registry()
    fold_load(state, Load(running=4, waiting=1), 0.0)
    state.inflight, state.pending, state.pending_tokens = 4, 2, 3000.0
    now = state.ttft_features(500.0)
    later = state.next_slot_features(500.0)
    assert (now.pending, now.decoding) == (2.0, 2.0)
    assert (later.pending, later.pending_tokens, later.decoding, later.engine_waiting) == (
        0.0,
        0.0,
        3.0,
        0.0,
    )


@pytest.mark.parametrize(
    ("reads", "inflight", "overflowing"),
    [
        ([Load(running=3)], 4, True),  # more sent than ever seen running: read it at once
        ([Load(running=3)], 3, False),
        ([], 4, False),  # metrics never counted running sequences: nothing to learn from
        ([Load(running=3, waiting=1)], 4, True),  # the probe beyond one full read: read it
        ([Load(running=3, waiting=1)] * 2, 5, False),  # its batch is known already
    ],
)
def test_a_backend_sent_more_than_it_ran_is_read_again_at_once(
    reads: list[Load], inflight: int, overflowing: bool
) -> None:
    from gateway.backends.load_watch import fold_load

    _, state = _registry()
    for second, load in enumerate(reads):
        fold_load(state, load, float(second))
    state.inflight = inflight
    assert state.overflowing is overflowing


# (ours at the read, what it ran, ours now) -> read again at once (its batch not known)
WITH_OTHERS: dict[str, tuple[int, Load, int, bool]] = {
    "another gateway's two beside our two, one more of ours: full together": (
        2, Load(running=4), 3, True),
    "theirs gone at the read: ours alone under its most": (2, Load(running=2), 3, False),
    "theirs beside ours, none added": (2, Load(running=4), 2, False),
}  # fmt: skip


@pytest.mark.parametrize(
    ("ours_at_read", "load", "ours_now", "overflowing"), WITH_OTHERS.values(), ids=WITH_OTHERS
)
def test_others_requests_count_toward_an_engines_overflow(
    ours_at_read: int, load: Load, ours_now: int, overflowing: bool
) -> None:
    from gateway.backends.load_watch import fold_load

    _, state = _registry(VLLM.replace(", max_inflight: 4", ""))
    fold_load(state, Load(running=4), 0.0)  # seen running four
    state.inflight = ours_at_read
    fold_load(state, load, state.clock())
    state.inflight = ours_now
    assert state.overflowing is overflowing


@pytest.mark.parametrize(
    ("gap_s", "cap"),
    [
        (0.05, 5),  # two reads of one long prefill holding the others back: still probing
        (0.99, 5),
        (1.0, 4),  # a second apart: two sightings of a full batch of 4
    ],
)
def test_a_batch_size_is_confirmed_by_reads_far_enough_apart(gap_s: float, cap: int) -> None:
    from gateway.backends.load_watch import fold_load

    _, state = _registry(VLLM.replace("max_inflight: 4", "max_inflight: 64"))
    fold_load(state, Load(running=4), 9.0)  # probed to 8
    state.inflight = 8  # the probe filled
    fold_load(state, Load(running=4, waiting=4), 10.0)
    fold_load(state, Load(running=4, waiting=4), 10.0 + gap_s)
    assert state.dispatch_cap == cap


# (our in flight at the read, what it reported running and waiting, our in flight now)
# -> (the dispatch cap, requests predicted queued inside it) for a known batch of 4
SHARED: dict[str, tuple[int, Load, int, tuple[int, float]]] = {
    "ours alone": (4, Load(running=4, waiting=0), 4, (4, 0.0)),
    "another gateway uses two: what it leaves": (2, Load(running=4, waiting=0), 2, (2, 0.0)),
    "another uses all four and queues: one is ours still": (
        0, Load(running=4, waiting=1), 1, (1, 2.0)),
    "both at half: full, nothing queued": (2, Load(running=4, waiting=0), 2, (2, 0.0)),
    "theirs queue too, ours beyond one queues": (2, Load(running=4, waiting=3), 3, (1, 4.0)),
    "another took three before the batch was known: one is left": (
        1, Load(running=4, waiting=0), 1, (1, 0.0)),
    "another uses one, we have two: half, not the three it leaves": (
        2, Load(running=3, waiting=0), 2, (2, 0.0)),
    "another uses one: still half, a stale read must not let both overfill it": (
        3, Load(running=4, waiting=0), 3, (2, 0.0)),
}  # fmt: skip


@pytest.mark.parametrize(
    ("ours_at_read", "load", "ours_now", "expected"), SHARED.values(), ids=SHARED.keys()
)
def test_a_batch_shared_with_other_gateways(
    ours_at_read: int, load: Load, ours_now: int, expected: tuple[int, float]
) -> None:
    from gateway.backends.load_watch import fold_load

    _, state = _registry(VLLM.replace(", max_inflight: 4", ""))
    for second in range(3):  # its batch of 4 known: two full reads with the cap filled
        fold_load(state, Load(running=4, waiting=1), float(second))
    state.inflight = ours_at_read
    fold_load(state, load, state.clock())
    state.inflight = ours_now
    assert (state.dispatch_cap, state.ttft_features(100.0).engine_waiting) == expected
    assert state.shared is (state.others > 0)


def test_a_shared_batch_is_halved_while_others_were_seen_recently() -> None:
    from gateway.backends.load_watch import fold_load
    from gateway.backends.state import SHARE_MEMORY_S

    _, state = _registry(VLLM.replace(", max_inflight: 4", ""))
    now = state.clock()
    for second in (-4.0, -3.0, -2.0):  # its batch of 4 known
        fold_load(state, Load(running=4, waiting=1), now + second)
    state.inflight = 2
    fold_load(state, Load(running=4), now - 1.0)  # another gateway runs two
    assert (state.shared, state.dispatch_cap) == (True, 2)
    fold_load(state, Load(running=2), now)  # they are idle at this read: still half
    assert (state.others, state.shared, state.dispatch_cap) == (0.0, True, 2)
    state.others_at = now - SHARE_MEMORY_S - 1.0  # none seen for longer: all of it
    assert (state.shared, state.dispatch_cap) == (False, 4)


# (seconds between this gateway dropping one of its 3 requests there and a read showing 3
# running) -> others the read is taken to show
DROPPED: dict[str, tuple[float, float]] = {
    "just dropped: the engine has not let go of it yet": (0.2, 0.0),
    "long dropped: the third is someone else's": (1.5, 1.0),
}


@pytest.mark.parametrize(("after_s", "others"), DROPPED.values(), ids=DROPPED.keys())
def test_a_request_this_gateway_dropped_is_not_taken_for_anothers(
    after_s: float, others: float
) -> None:
    from gateway.backends.load_watch import fold_load

    now = [10.0]
    registry = BackendRegistry(clock=lambda: now[0])
    registry.reconcile(policy(VLLM))
    state = registry.get("a")
    assert state is not None
    for _ in range(3):
        state.sent(0.0)
    state.done(aborted=True)  # a hedge's loser, a request taken back
    now[0] += after_s
    fold_load(state, Load(running=3), now[0])
    assert state.others == others
    assert (state.others_at == now[0]) is (others > 0)


def test_a_pools_states_are_made_once_per_policy_and_reconcile() -> None:
    compiled = policy(BEFORE)
    registry = BackendRegistry()
    registry.reconcile(compiled)
    first = registry.in_pool(compiled, "small")
    assert registry.in_pool(compiled, "small") is first  # the same policy: made once
    same_text = policy(BEFORE)
    assert registry.in_pool(same_text, "small") == first  # another policy: made again
    assert registry.in_pool(same_text, "small") is not first
    registry.reconcile(compiled)  # (same backends: the states are kept, the tuple made anew)
    again = registry.in_pool(compiled, "small")
    assert again is not first
    assert again == first
    moved = policy(
        BEFORE.replace("model: m, pool: small", "model: m, pool: big").replace(
            "fast: {pool: small}", "fast: {pool: big}"
        )
    )
    registry.reconcile(moved)
    assert [s.name for s in registry.in_pool(moved, "big")] == ["a", "b"]


# id -> (ours in flight at each read, the reads) -> whether its cap is a limit it showed
SHARED_LIMIT: dict[str, tuple[int, list[Load], bool]] = {
    "alone, seen full once: a sighting, not yet a limit": (5, [Load(running=4, waiting=1)], False),
    "another gateway's two in it, seen full once: kept to half, a limit": (
        3, [Load(running=4, waiting=1)], True),
    "shared, then full at half each: no read shows it waiting again, still a limit": (
        3, [Load(running=4, waiting=1), Load(running=4)], True),
}  # fmt: skip


@pytest.mark.parametrize(("ours", "reads", "shown"), SHARED_LIMIT.values(), ids=SHARED_LIMIT.keys())
def test_a_batch_shared_with_others_is_a_limit_once_seen(
    ours: int, reads: list[Load], shown: bool
) -> None:
    from gateway.backends.load_watch import fold_load

    _, state = _registry(VLLM.replace(", max_inflight: 4", ""))
    now = state.clock()
    fold_load(state, Load(running=1), now - 3.0)  # probed
    state.inflight = ours
    for second, load in enumerate(reads):
        fold_load(state, load, now - 0.5 + second * 0.1)
    assert (state.batch_known, state.limit_shown) == (False, shown)
