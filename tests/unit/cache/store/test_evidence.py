"""Per-entry evidence: when it refuses a hit, how a verification changes it, how it is
stored (and read back from entries stored before it existed)."""

from __future__ import annotations

import numpy as np
import orjson
import pytest

from gateway.cache.store.entry import Entry
from gateway.cache.store.evidence import NONE, Evidence
from gateway.cache.store.memory_store import MemoryStore


@pytest.mark.parametrize(
    ("evidence", "cosine", "max_disagreements", "reason"),
    [
        (NONE, 0.70, 2, None),  # no evidence: the rule alone decides
        (Evidence(agree=9), 0.70, 2, None),
        (Evidence(disagree=1, min_cosine=0.91), 0.90, 2, "tightened"),
        (Evidence(disagree=1, min_cosine=0.91), 0.91, 2, None),  # as close as allowed
        (Evidence(disagree=1, min_cosine=0.91), 0.97, 2, None),  # closer than the bad one
        (Evidence(disagree=2, min_cosine=0.93), 0.99, 2, "exact_only"),
        (Evidence(disagree=1, min_cosine=0.91), 0.99, 1, "exact_only"),
        (Evidence(agree=5, disagree=2, min_cosine=0.9), 0.95, 3, None),
    ],
)
def test_refusal(
    evidence: Evidence, cosine: float, max_disagreements: int, reason: str | None
) -> None:
    assert evidence.refusal(cosine, max_disagreements) == reason


@pytest.mark.parametrize(
    ("before", "agreed", "cosine", "margin", "after"),
    [
        (NONE, True, 0.90, 0.01, Evidence(agree=1)),
        (NONE, False, 0.90, 0.01, Evidence(disagree=1, min_cosine=0.91)),
        (NONE, False, 0.90, 0.0, Evidence(disagree=1, min_cosine=0.90)),
        # A disagreement closer than the last one raises the threshold further...
        (Evidence(disagree=1, min_cosine=0.91), False, 0.95, 0.01, Evidence(0, 2, 0.96)),
        # ...one further away (possible only from a replica that had not seen it) does not
        # lower it.
        (Evidence(disagree=1, min_cosine=0.96), False, 0.90, 0.01, Evidence(0, 2, 0.96)),
        # Agreement keeps a raised threshold where it is.
        (Evidence(disagree=1, min_cosine=0.96), True, 0.97, 0.01, Evidence(1, 1, 0.96)),
    ],
)
def test_after_a_verification(
    before: Evidence, agreed: bool, cosine: float, margin: float, after: Evidence
) -> None:
    got = before.after(agreed=agreed, cosine=cosine, margin=margin)
    assert (got.agree, got.disagree) == (after.agree, after.disagree)
    assert got.min_cosine == pytest.approx(after.min_cosine)


def _entry(evidence: Evidence = NONE) -> Entry:
    vector = np.arange(4, dtype=np.float32)
    answer = {"choices": [{"message": {"content": "a"}}]}
    return Entry(7, "x", "s", "q", vector, answer, 3, evidence)


@pytest.mark.parametrize("evidence", [NONE, Evidence(3, 1, 0.925), Evidence(0, 2, 1.01)])
def test_entry_json_round_trip(evidence: Evidence) -> None:
    back = Entry.from_json(_entry(evidence).to_json())
    assert back.evidence == evidence
    assert back.vector is not None
    assert back.vector.tolist() == [0.0, 1.0, 2.0, 3.0]


@pytest.mark.parametrize("stored", [{}, {"evidence": None}, {"evidence": {}}])
def test_entries_stored_before_evidence_read_as_none(stored: dict[str, object]) -> None:
    old = orjson.loads(_entry().to_json())
    del old["evidence"]
    assert Entry.from_json(orjson.dumps({**old, **stored})).evidence == NONE


async def test_memory_store_update_keeps_expiry_and_order() -> None:
    now = [0.0]
    store = MemoryStore(ttl_s=10, max_entries=2, clock=lambda: now[0])
    first, second = _entry(), Entry(8, "y", "s", "q", None, {"choices": []}, 1)
    await store.put(first)
    await store.put(second)
    now[0] = 5.0
    updated = await store.update(7, lambda e: e.after(agreed=False, cosine=0.9, margin=0.01))
    assert updated is not None
    assert updated.evidence.disagree == 1
    found = await store.get(7)
    assert found is not None
    assert found.evidence == updated.evidence
    assert await store.update(99, lambda e: e) is None  # gone: nothing to update
    now[0] = 10.0  # the update did not extend its life
    assert await store.update(7, lambda e: e) is None
    assert await store.get(7) is None
