"""What a cache store offers, whichever it is (memory or Redis).

A store keeps entries with a time to live and a maximum count (least recently used evicted
first) and tells its listener which entries appeared and disappeared, so the local vector
index follows it. ``update`` changes an entry's evidence (``evidence.py``) in place, where
every replica reads it, keeping its expiry and its place in the eviction order. Store
methods never raise on a store outage: they return None (a miss) or drop the write, and
count the failure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from gateway.cache.store.entry import Entry
from gateway.cache.store.evidence import Evidence

# What an update does to an entry's evidence: pure, so a store may apply it again on a race.
Change = Callable[[Evidence], Evidence]


class IndexListener(Protocol):
    def added(self, entry: Entry) -> None: ...

    def removed(self, entry_id: int) -> None: ...

    def reset(self, entries: list[Entry]) -> None: ...


class CacheStore(Protocol):
    async def start(self, listener: IndexListener) -> None: ...

    async def close(self) -> None: ...

    async def get_exact(self, key: str) -> Entry | None: ...

    async def get(self, entry_id: int) -> Entry | None: ...

    async def put(self, entry: Entry) -> None: ...

    async def update(self, entry_id: int, change: Change) -> Entry | None:
        """The entry with ``change`` applied to its evidence (None: gone, or the store
        failed)."""
        ...

    def __len__(self) -> int: ...
