from __future__ import annotations

import numpy as np

from gateway.cache.store.entry import Entry
from gateway.cache.store.memory_store import MemoryStore


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, int]] = []

    def added(self, entry: Entry) -> None:
        self.events.append(("add", entry.id))

    def removed(self, entry_id: int) -> None:
        self.events.append(("del", entry_id))

    def reset(self, entries: list[Entry]) -> None:
        self.events.append(("reset", len(entries)))


def _entry(i: int, exact: str | None = None) -> Entry:
    return Entry(i, exact or f"x{i}", "s", "q", np.zeros(4, np.float32), {"choices": []}, 3)


async def test_ttl_lru_and_listener() -> None:
    clock, rec = Clock(), Recorder()
    store = MemoryStore(ttl_s=10, max_entries=2, clock=clock)
    await store.start(rec)
    await store.put(_entry(1))
    await store.put(_entry(2))
    assert await store.get(1) is not None  # 1 is now the most recently used
    await store.put(_entry(3))
    assert await store.get(2) is None
    assert len(store) == 2
    assert rec.events == [("add", 1), ("add", 2), ("add", 3), ("del", 2)]
    assert (await store.get_exact("x1")) is not None
    clock.now = 10.0
    assert await store.get_exact("x1") is None
    assert ("del", 1) in rec.events


async def test_a_refresh_replaces_the_answer_to_the_same_request() -> None:
    store = MemoryStore(ttl_s=10, max_entries=10, clock=Clock())
    await store.start(Recorder())
    await store.put(_entry(1, "same"))
    await store.put(_entry(2, "same"))
    found = await store.get_exact("same")
    assert found is not None
    assert found.id == 2
    assert len(store) == 1


def test_entries_survive_json() -> None:
    entry = _entry(7)
    back = Entry.from_json(entry.to_json())
    assert back.id == 7
    assert back.vector is not None
    assert back.vector.shape == (4,)
    assert back.fits(3)
    assert not back.fits(2)
    assert back.fits(None)
