"""The pure parts of the lease algorithm: shares, keys, script replies, the link's mode."""

from __future__ import annotations

import pytest

from gateway.cluster.leases import (
    AcquireReply,
    LinkState,
    Mode,
    RenewReply,
    acquire_reply,
    local_share,
    pool_keys,
    renew_reply,
)


@pytest.mark.parametrize(
    ("limit", "replicas", "share"),
    [
        (4, 1, 4),
        (4, 2, 2),
        (4, 3, 2),  # rounded up: a replica never gets 0 of a limit it could use
        (5, 2, 3),
        (1, 8, 1),
        (4, 0, 4),  # never read the count: as if alone
        (100, 7, 15),
    ],
)
def test_local_share(limit: int, replicas: int, share: int) -> None:
    assert local_share(limit, replicas) == share


def test_pool_keys_share_one_hash_slot() -> None:
    assert pool_keys("gw", "small") == (
        "gw:{small}:leases",
        "gw:{small}:waiting",
        "gw:{small}:replicas",
    )


@pytest.mark.parametrize(
    ("raw", "reply"),
    [
        ([1, 3, 2], AcquireReply(True, 3, 2)),
        ([0, 4, 2], AcquireReply(False, 4, 2)),
        ([b"1", b"1", b"1"], AcquireReply(True, 1, 1)),
    ],
)
def test_acquire_reply(raw: object, reply: AcquireReply) -> None:
    assert acquire_reply(raw) == reply


@pytest.mark.parametrize("raw", [None, [1, 2], "OK", [1, 2, 3, 4]])
def test_odd_replies_are_refused(raw: object) -> None:
    with pytest.raises(ValueError, match="unexpected"):
        acquire_reply(raw)


def test_renew_reply() -> None:
    assert renew_reply([2, 3]) == RenewReply(2, 3)


@pytest.mark.parametrize(
    ("events", "modes", "changes"),
    [
        ("", [], []),
        ("f", [Mode.LOCAL], [True]),
        ("ff", [Mode.LOCAL, Mode.LOCAL], [True, False]),  # one transition, one log line
        ("fs", [Mode.LOCAL, Mode.CLUSTER], [True, True]),
        ("ss", [Mode.CLUSTER, Mode.CLUSTER], [False, False]),
        ("fsfs", [Mode.LOCAL, Mode.CLUSTER, Mode.LOCAL, Mode.CLUSTER], [True] * 4),
    ],
)
def test_link_state_reports_each_transition_once(
    events: str, modes: list[Mode], changes: list[bool]
) -> None:
    state = LinkState()
    assert state.mode is Mode.CLUSTER
    seen_modes, seen_changes = [], []
    for event in events:
        seen_changes.append(state.failed() if event == "f" else state.succeeded())
        seen_modes.append(state.mode)
    assert (seen_modes, seen_changes) == (modes, changes)
