"""A backend's state as one worker of ``serve --workers N`` sees it: its own counts on the
host board, its siblings' in every decision."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from gateway.backends.load_watch import fold_load
from gateway.backends.registry import BackendRegistry
from gateway.backends.scrape import Load
from gateway.backends.state import BackendState
from gateway.host.board import Board
from gateway.host.shares import BackendShare
from tests.unit.gateway.helpers import policy

POLICY = """
backends:
  - {name: a, url: http://127.0.0.1:8001, model: m, pool: p, max_inflight: 4}
models:
  fast: {pool: p}
"""


def _workers(tmp_path: Path, text: str = POLICY) -> tuple[BackendState, BackendState]:
    boards = [Board.create(tmp_path, rows=3, slots=8), Board.attach(tmp_path)]
    states = []
    for board in boards:
        board.claim_row(1)
        registry = BackendRegistry(share=partial(BackendShare, board))
        registry.reconcile(policy(text))
        state = registry.get("a")
        assert state is not None
        states.append(state)
    return states[0], states[1]


def test_the_cap_counts_the_siblings_requests(tmp_path: Path) -> None:
    a, b = _workers(tmp_path)
    for _ in range(3):
        a.sent(100.0)
    assert (a.inflight, b.inflight, b.host_inflight) == (3, 0, 3.0)
    assert b.has_capacity
    b.sent(50.0)
    assert not a.has_capacity  # 4 of 4 on the replica
    assert not b.has_capacity
    a.done()
    assert b.has_capacity


def test_the_ttft_features_are_the_hosts(tmp_path: Path) -> None:
    a, b = _workers(tmp_path)
    a.sent(100.0)
    a.sent(200.0)
    a.prefilled(100.0)  # one of a's has its first token: decoding
    b.sent(50.0)
    features = b.ttft_features(10.0)
    assert (features.pending, features.pending_tokens, features.decoding) == (2.0, 250.0, 1.0)
    assert b.next_slot_features(10.0).decoding == pytest.approx(2.0)  # 3 in flight, one frees


def test_others_are_other_hosts_only(tmp_path: Path) -> None:
    a, b = _workers(tmp_path, POLICY.replace("pool: p,", "pool: p, engine: vllm,"))
    for _ in range(2):
        a.sent(0.0)
    b.sent(0.0)
    # The engine runs 5: our host's 3 and 2 of another gateway's.
    fold_load(b, Load(running=5), b.clock())
    assert b.own_at_read == 3.0
    assert b.others == pytest.approx(2.0)


def test_a_new_url_is_a_new_backend_on_the_board_too(tmp_path: Path) -> None:
    a, _ = _workers(tmp_path)
    a.sent(0.0)
    board = Board.attach(tmp_path)
    board.claim_row(1)
    registry = BackendRegistry(share=partial(BackendShare, board))
    registry.reconcile(policy(POLICY.replace("8001", "8009")))
    moved = registry.get("a")
    assert moved is not None
    assert moved.host_inflight == 0.0  # the old URL's requests are not this backend's


# id -> (what a sent there, dropped, b's own count when the read was asked for, the read)
# -> the others b sees: not its siblings' drops, nor a request that ended during the read.
OWN: dict[str, tuple[int, int, float, Load, float]] = {
    "another gateway's two": (2, 0, 0.0, Load(running=4), 2.0),
    "a sibling dropped one the engine still runs": (2, 1, 0.0, Load(running=2), 0.0),
    "one of ours ended while the read was on its way": (1, 0, 2.0, Load(running=2), 0.0),
}  # fmt: skip


@pytest.mark.parametrize(
    ("sent", "dropped", "before", "load", "others"), OWN.values(), ids=OWN.keys()
)
def test_what_the_host_had_there_during_a_read_is_its_own(
    tmp_path: Path, sent: int, dropped: int, before: float, load: Load, others: float
) -> None:
    a, b = _workers(tmp_path, POLICY.replace("pool: p,", "pool: p, engine: vllm,"))
    for _ in range(sent):
        a.sent(0.0)
    for _ in range(dropped):
        a.done(aborted=True)  # a hedge's loser, a request taken back
    fold_load(b, load, b.clock(), own_before=before)
    assert b.others == pytest.approx(others)
    assert b.host_dropped(b.clock() + 5.0) == 0.0  # the engine let go of it by then
