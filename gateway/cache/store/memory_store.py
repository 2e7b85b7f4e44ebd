"""The in-process cache store: a dict in least-recently-used order with per-entry expiry.

Algorithm: an ``OrderedDict`` keyed by entry id, moved to the end on every read; a put past
``max_entries`` evicts from the front. Each entry expires ``ttl_s`` after it was stored
(clock injected), checked when it is read; expired entries met while evicting go first.
Parameters: ``ttl_s``, ``max_entries``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import replace

from gateway.cache.store.entry import Entry
from gateway.cache.store.protocol import Change, IndexListener


class MemoryStore:
    def __init__(self, *, ttl_s: float, max_entries: int, clock: Callable[[], float]) -> None:
        self._ttl = ttl_s
        self._max = max_entries
        self._clock = clock
        self._entries: OrderedDict[int, tuple[Entry, float]] = OrderedDict()
        self._exact: dict[str, int] = {}
        self._listener: IndexListener | None = None

    def __len__(self) -> int:
        return len(self._entries)

    async def start(self, listener: IndexListener) -> None:
        self._listener = listener

    async def close(self) -> None:
        self._entries.clear()
        self._exact.clear()

    async def get_exact(self, key: str) -> Entry | None:
        entry_id = self._exact.get(key)
        return None if entry_id is None else await self.get(entry_id)

    async def get(self, entry_id: int) -> Entry | None:
        found = self._entries.get(entry_id)
        if found is None:
            return None
        entry, expires = found
        if self._clock() >= expires:
            self._drop(entry_id)
            return None
        self._entries.move_to_end(entry_id)
        return entry

    async def put(self, entry: Entry) -> None:
        old = self._exact.get(entry.exact)
        if old is not None:
            self._drop(old)  # a refresh replaces the answer to the same request
        self._entries[entry.id] = (entry, self._clock() + self._ttl)
        self._exact[entry.exact] = entry.id
        if self._listener is not None:
            self._listener.added(entry)
        while len(self._entries) > self._max:
            self._drop(next(iter(self._entries)))

    async def update(self, entry_id: int, change: Change) -> Entry | None:
        found = self._entries.get(entry_id)
        if found is None or self._clock() >= found[1]:
            return None  # an expired entry is dropped by the next read
        entry = replace(found[0], evidence=change(found[0].evidence))
        self._entries[entry_id] = (entry, found[1])  # same expiry, same place in the order
        return entry

    def _drop(self, entry_id: int) -> None:
        found = self._entries.pop(entry_id, None)
        if found is None:
            return
        entry = found[0]
        if self._exact.get(entry.exact) == entry_id:
            del self._exact[entry.exact]
        if self._listener is not None:
            self._listener.removed(entry_id)
