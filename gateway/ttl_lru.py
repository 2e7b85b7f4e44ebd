"""A bounded map that forgets least recently written entries and entries idle too long.

Algorithm: an ``OrderedDict`` in order of last write. ``put`` moves a key to the young end;
beyond ``max_entries`` the oldest go. An entry not written for ``ttl_s`` is expired: since
the order is write order and the clock is monotonic, expired entries sit at the old end, so
expiry costs O(expired). Reads do not refresh an entry (a session that is only read is not
being used).

Parameters: ``max_entries``, ``ttl_s``, an injected monotonic ``clock``. Event-loop only.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class TtlLru(Generic[K, V]):
    def __init__(self, max_entries: int, ttl_s: float, clock: Callable[[], float]) -> None:
        if max_entries < 1 or ttl_s <= 0:
            raise ValueError("need max_entries >= 1 and ttl_s > 0")
        self._max = max_entries
        self._ttl_s = ttl_s
        self._clock = clock
        self._entries: OrderedDict[K, tuple[V, float]] = OrderedDict()

    def get(self, key: K) -> V | None:
        self._expire(self._clock())
        entry = self._entries.get(key)
        return None if entry is None else entry[0]

    def put(self, key: K, value: V) -> None:
        now = self._clock()
        self._expire(now)
        self._entries[key] = (value, now)
        self._entries.move_to_end(key)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)

    def pop(self, key: K) -> V | None:
        entry = self._entries.pop(key, None)
        return None if entry is None else entry[0]

    def __len__(self) -> int:
        return len(self._entries)

    def _expire(self, now: float) -> None:
        while self._entries:
            key, (_, written) = next(iter(self._entries.items()))
            if now - written < self._ttl_s:
                return
            del self._entries[key]
