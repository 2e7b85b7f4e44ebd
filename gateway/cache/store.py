"""What a cache store offers, whichever it is (memory or Redis).

A store keeps entries with a time to live and a maximum count (least recently used evicted
first) and tells its listener which entries appeared and disappeared, so the local vector
index follows it. Store methods never raise on a store outage: they return None (a miss)
or drop the write, and count the failure.
"""

from __future__ import annotations

from typing import Protocol

from gateway.cache.entry import Entry


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

    def __len__(self) -> int: ...
