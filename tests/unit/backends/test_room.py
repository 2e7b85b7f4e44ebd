"""An engine whose fresh report shows room: its probe rises at once, and a prediction for a
request it can take now refuses nothing (issue 31: capacity from evidence). Injected clock."""

from __future__ import annotations

import pytest

from gateway.backends.load_watch import fold_load
from gateway.backends.registry import BackendRegistry
from gateway.backends.scrape import Load
from gateway.backends.state import BackendState, Health
from gateway.backends.ttft import TtftFeatures
from tests.unit.gateway.helpers import policy

TEXT = """
backends:
  - {name: a, url: http://127.0.0.1:8001, model: m, pool: p, engine: vllm}
models:
  m: {pool: p}
"""


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _state(clock: Clock, text: str = TEXT) -> BackendState:
    registry = BackendRegistry(clock=clock)
    registry.reconcile(policy(text))
    state = registry.get("a")
    assert state is not None
    state.health = Health.HEALTHY
    return state


def _held(state: BackendState, seconds: float, times: int = 5) -> None:
    for _ in range(times):
        state.inflight += 1
        state.done(seconds)


# (read: running, waiting, kv; seconds since the read; mean hold s; late first token s ago)
# -> the dispatch cap
CAPS: dict[str, tuple[Load, float, float | None, float | None, int]] = {
    "fast engine, fresh report of room: a step to 64 (200) users goes at once": (
        Load(running=4), 0.5, 0.02, None, 204),
    "slow engine (hold 1.2 s), room: PROBE_FACTOR x what it ran": (
        Load(running=4), 0.5, 1.2, None, 8),
    "hold 0.5 s, running 8: as many as drain in a second behind 8": (
        Load(running=8), 0.5, 0.5, None, 24),
    "no hold seen yet: PROBE_FACTOR x what it ran, at least PROBE_MIN": (
        Load(running=4), 0.5, None, None, 8),
    "stale report (3 s, fresh for 2): the probe alone": (Load(running=4), 3.0, 0.02, None, 8),
    "it reports waiting (not its batch: ran fewer than seen): the probe alone": (
        Load(running=4, waiting=1, kv_usage=0.95), 0.5, 0.02, None, 8),
    "KV cache nearly full: the probe alone": (
        Load(running=4, kv_usage=0.92), 0.5, 0.02, None, 8),
    "a first token came late 1 s ago: the report is not believed": (
        Load(running=4), 0.5, 0.02, 1.0, 8),
    "the late first token is older than the freshness window": (
        Load(running=4), 0.5, 0.02, 2.5, 204),
}  # fmt: skip


@pytest.mark.parametrize(
    ("load", "age_s", "hold_s", "late_s", "cap"), CAPS.values(), ids=CAPS.keys()
)
def test_a_fresh_report_of_room_raises_the_probe_at_once(
    load: Load, age_s: float, hold_s: float | None, late_s: float | None, cap: int
) -> None:
    clock = Clock()
    state = _state(clock)
    if hold_s is not None:
        _held(state, hold_s, times=1)
    if late_s is not None:
        clock.now -= late_s
        state.first_token_late(10.0, 1.0)
        clock.now += late_s
    fold_load(state, load, clock.now - age_s, fresh_s=2.0)
    assert state.dispatch_cap == cap
    assert state.probing  # still no limit shown: a queue behind it is no evidence


def test_a_batch_shown_full_caps_it_whatever_its_hold() -> None:
    clock = Clock()
    state = _state(clock)
    _held(state, 0.02)
    state.inflight = 4
    fold_load(state, Load(running=4), clock.now, fresh_s=2.0)
    assert state.dispatch_cap == 204
    state.inflight = 64  # the step went out; the next read shows 8 running, 56 waiting
    clock.now += 0.05
    fold_load(state, Load(running=8, waiting=56), clock.now, fresh_s=2.0)
    # 8 and a quarter more (a single read may be a moment) until a second read confirms it
    assert (state.dispatch_cap, state.probing, state.shows_room) == (10, False, False)


# (the read after a sighting of 8 running, 56 waiting: running, waiting) -> the cap, probing
AFTER_FULL: dict[str, tuple[float, float, int, bool]] = {
    "ran more, nothing waiting: it has room, probed again at once": (9, 0, 459, True),
    "ran more, still waiting: a bigger batch, a quarter beyond it": (9, 3, 12, False),
    "ran its batch, two waiting (the probe's): the batch holds": (8, 2, 10, False),
    "ran its batch, nothing waiting: the batch holds": (8, 0, 10, False),
}  # fmt: skip


@pytest.mark.parametrize(
    ("running", "waiting", "cap", "probing"), AFTER_FULL.values(), ids=AFTER_FULL.keys()
)
def test_a_batch_seen_full_for_a_moment_lifts_when_it_runs_more_with_nothing_waiting(
    running: float, waiting: float, cap: int, probing: bool
) -> None:
    clock = Clock()
    state = _state(clock)
    _held(state, 0.02)
    state.inflight = 64
    fold_load(state, Load(running=8, waiting=56), clock.now, fresh_s=2.0)
    assert state.dispatch_cap == 10
    state.inflight = int(running + waiting)  # all of it this gateway's
    clock.now += 0.05
    fold_load(state, Load(running=running, waiting=waiting), clock.now, fresh_s=2.0)
    assert (state.dispatch_cap, state.probing) == (cap, probing)


# id -> the reads (seconds after the first, running, waiting, all of it this gateway's), in
# order -> whether its cap is a limit it showed (a queue behind it is evidence: slot waits
# may refuse). The first full read comes with the probe's cap (204) unfilled: it sets the
# batch but does not count toward confirming it.
LIMITS: dict[str, tuple[tuple[tuple[float, float, float], ...], bool]] = {
    "nothing full: a probe of its room": (((0.0, 4, 0),), False),
    "one read full (8 running, 56 waiting): a sighting, maybe a moment": (((0.0, 8, 56),), False),
    "full again 0.05 s later: still one sighting (a long prefill's reads)": (
        ((0.0, 8, 56), (0.05, 8, 50)), False),
    "full again a second later, its cap (10) filled: one confirming read": (
        ((0.0, 8, 56), (1.0, 8, 2)), False),
    "and again a second later: the batch is known": (
        ((0.0, 8, 56), (1.0, 8, 2), (2.0, 8, 2)), True),
    "full again a second later, its cap (10) not filled: a busy engine's arrivals": (
        ((0.0, 8, 56), (1.0, 8, 1)), False),
    "known, then it runs more with nothing waiting: probed again": (
        ((0.0, 8, 56), (1.0, 8, 2), (2.0, 8, 2), (2.5, 12, 0)), False),
    "a 256-user step seen once at 104 running, 5 waiting (the ramp's)": (
        ((0.0, 64, 0), (0.5, 104, 5)), False),
}  # fmt: skip


@pytest.mark.parametrize(("reads", "shown"), LIMITS.values(), ids=LIMITS.keys())
def test_a_batch_is_a_limit_shown_only_once_a_second_read_confirms_it(
    reads: tuple[tuple[float, float, float], ...], shown: bool
) -> None:
    clock = Clock()
    state = _state(clock)
    _held(state, 0.02)
    start = clock.now
    for at, running, waiting in reads:
        clock.now = start + at
        state.inflight = int(running + waiting)  # all of it this gateway's
        fold_load(state, Load(running=running, waiting=waiting), clock.now, fresh_s=2.0)
    assert state.limit_shown is shown


# The batch of 8 confirmed (as above: reads at 0, 1 and 2 s), then more reads (seconds after
# the first, running, waiting, all of it this gateway's) -> its cap and whether it is a limit
# shown. A known batch kept full with nothing waiting for RELEARN_S (10 s) is probed again: a
# burst of long prompts' prefills may have shown less than it runs.
RELEARN: dict[str, tuple[tuple[tuple[float, float, float], ...], tuple[int, bool]]] = {
    "kept full, none waiting, for 9 s: its batch": (((3.0, 8, 0), (12.0, 8, 0)), (8, True)),
    "for 10 s: a quarter more, still a limit shown": (((3.0, 8, 0), (13.0, 8, 0)), (10, True)),
    "some waiting in between: the 10 s start again": (
        ((3.0, 8, 0), (8.0, 8, 1), (13.0, 8, 0)), (8, True)),
    "its cap not filled (6 sent): no evidence of room": (((3.0, 6, 0), (13.0, 6, 0)), (8, True)),
    "probed again, it runs 10, none waiting: probed as one with room (10 x 51)": (
        ((3.0, 8, 0), (13.0, 8, 0), (13.5, 10, 0)), (510, False)),
    "probed again, full at 8 once more: its batch again": (
        ((3.0, 8, 0), (13.0, 8, 0), (14.0, 8, 2)), (8, True)),
}  # fmt: skip


@pytest.mark.parametrize(("reads", "after"), RELEARN.values(), ids=RELEARN.keys())
def test_a_known_batch_kept_full_with_nothing_waiting_is_probed_again(
    reads: tuple[tuple[float, float, float], ...], after: tuple[int, bool]
) -> None:
    clock = Clock()
    state = _state(clock)
    _held(state, 0.02)
    start = clock.now
    for at, running, waiting in ((0.0, 8, 56), (1.0, 8, 2), (2.0, 8, 2), *reads):
        clock.now = start + at
        state.inflight = int(running + waiting)  # all of it this gateway's
        fold_load(state, Load(running=running, waiting=waiting), clock.now, fresh_s=2.0)
    assert (state.dispatch_cap, state.limit_shown) == after


# The batch of 8 confirmed with 6,000-token prompts asked (reads at 0, 1 and 2 s), then
# prompts of these sizes asked, one after another -> its cap and whether it is a limit shown.
# Long prompts' prefills show the engine's token budget, not its slots: prompts under a
# fifth as long (recently, ``asked.py``) are not capped by that batch (a quarter more, then
# the next read lifts it).
SHORTER: dict[str, tuple[tuple[float, ...], tuple[int, bool]]] = {
    "the same prompts: its batch": ((6000.0, 6000.0, 6000.0), (8, True)),
    "prompts half as long: its batch": ((3000.0, 3000.0, 3000.0), (8, True)),
    "one short prompt among long ones: its batch": ((6000.0, 100.0), (8, True)),
    "two short ones after long: under a fifth, a quarter more and no limit": (
        (100.0, 100.0), (10, False)),
    "short ones, then long again: its batch again": (
        (100.0, 100.0, 6000.0, 6000.0, 6000.0), (8, True)),
}  # fmt: skip


@pytest.mark.parametrize(("asked", "after"), SHORTER.values(), ids=SHORTER.keys())
def test_a_batch_seen_full_with_long_prompts_does_not_cap_short_ones(
    asked: tuple[float, ...], after: tuple[int, bool]
) -> None:
    clock = Clock()
    state = _state(clock)
    _held(state, 0.02)
    start = clock.now
    state.asked.add(6000.0)
    for at, running, waiting in ((0.0, 8, 56), (1.0, 8, 2), (2.0, 8, 2)):
        clock.now = start + at
        state.inflight = int(running + waiting)  # all of it this gateway's
        fold_load(state, Load(running=running, waiting=waiting), clock.now, fresh_s=2.0)
    assert (state.dispatch_cap, state.limit_shown) == (8, True)
    for tokens in asked:
        state.asked.add(tokens)
    assert (state.dispatch_cap, state.limit_shown) == after


def test_the_policys_cap_is_a_limit_shown() -> None:
    clock = Clock()
    state = _state(clock, TEXT.replace("engine: vllm}", "engine: vllm, max_inflight: 4}"))
    fold_load(state, Load(running=4), clock.now, fresh_s=2.0)
    assert (state.dispatch_cap, state.limit_shown) == (4, True)


def test_the_mean_hold_follows_what_requests_held_and_ignores_nonsense() -> None:
    state = _state(Clock())
    assert state.hold_s is None
    _held(state, 1.0, times=1)
    assert state.hold_s == 1.0
    _held(state, 2.0, times=1)
    assert state.hold_s == pytest.approx(1.1)
    for bad in (float("nan"), -1.0, None):
        state.inflight += 1
        state.done(bad)
    assert state.hold_s == pytest.approx(1.1)
    assert state.inflight == 0


def _trained(state: BackendState, ttft_s: float) -> None:
    """Observations at up to 50 pending requests, each taking ``ttft_s`` (a slow gateway)."""
    model = state.ttft_model
    for pending in (10.0, 30.0, 50.0, 50.0, 40.0):
        features = TtftFeatures(100.0, pending * 100.0, pending, pending, pending / 10.0)
        model.observe(features, ttft_s, model.predict(features))
    model.fold()  # as a prediction past ``FOLD_S`` would (the clock here stands still)


# (fresh report: waiting; seconds old; late first token s ago; at the next slot)
# -> may the prediction refuse (``ttft_prediction``, its second value)
SUPPORT: dict[str, tuple[float, float, float | None, bool, bool]] = {
    "engine reports room, first tokens in line: never refuses": (0.0, 0.5, None, False, False),
    "engine reports requests waiting: its prediction may refuse": (3.0, 0.5, None, False, True),
    "stale report: the model's word": (0.0, 5.0, None, False, True),
    "a first token came late just now: the model's word": (0.0, 0.5, 0.1, False, True),
    "a wait for its next slot (every slot busy): the model's word": (0.0, 0.5, None, True, True),
}  # fmt: skip


@pytest.mark.parametrize(
    ("waiting", "age_s", "late_s", "next_slot", "refuses"),
    SUPPORT.values(),
    ids=SUPPORT.keys(),
)
def test_an_engine_with_room_is_not_predicted_to_refuse(
    waiting: float, age_s: float, late_s: float | None, next_slot: bool, refuses: bool
) -> None:
    """The 200-user ramp's ``deadline_unmeetable``: a model fitted while the gateway was
    CPU-bound predicts 6 s on an engine reporting nothing waiting."""
    clock = Clock()
    state = _state(clock)
    _trained(state, 6.0)
    state.inflight = state.pending = 40
    state.pending_tokens = 4000.0
    if late_s is not None:
        clock.now -= late_s
        state.first_token_late(10.0, 1.0)
        clock.now += late_s
    fold_load(state, Load(running=40, waiting=waiting), clock.now - age_s, fresh_s=2.0)
    assert state.predict_ttft(100.0, at_next_slot=next_slot) > 1.0
    assert state.ttft_prediction(100.0, at_next_slot=next_slot)[1] is refuses
    assert state.ttft_prediction(100.0, at_next_slot=next_slot) == (
        state.predict_ttft(100.0, at_next_slot=next_slot),
        refuses,
    )


def test_a_cold_burst_onto_a_slow_small_engine_is_probed_to_show_its_batch() -> None:
    """After an idle minute (nothing running, fresh reads), 300 at once onto 4 slots of 3 s:
    the probe (8) goes, so the first read shows the batch full; the rest waits in the
    gateway, where it is judged."""
    clock = Clock()
    state = _state(clock)
    _held(state, 3.0)
    state.room_seen = 4.0  # the warm-up's first tokens came in line with 4 in flight
    fold_load(state, Load(running=0), clock.now, fresh_s=2.0)
    assert (state.dispatch_cap, state.probing) == (8, True)
    state.inflight = 8
    fold_load(state, Load(running=4, waiting=4), clock.now + 0.05, fresh_s=2.0)
    assert (state.dispatch_cap, state.probing) == (5, False)


# (observed s, calibrated prediction s) -> the report of room is no longer believed
LATE: dict[str, tuple[float, float, bool]] = {
    "past the calibrated prediction (one time in ten): still believed": (0.09, 0.06, False),
    "twice it, but within 0.1 s: jitter, still believed": (0.2, 0.06, False),
    "well past it: not believed": (0.5, 0.06, True),
    "a slow engine, 2.5x its prediction: not believed": (5.0, 2.0, True),
}  # fmt: skip


@pytest.mark.parametrize(("observed", "upper", "late"), LATE.values(), ids=LATE.keys())
def test_only_a_first_token_well_past_its_prediction_is_late(
    observed: float, upper: float, late: bool
) -> None:
    clock = Clock()
    state = _state(clock)
    fold_load(state, Load(running=4), clock.now, fresh_s=2.0)
    state.first_token_late(observed, upper)
    assert state.shows_room is not late
