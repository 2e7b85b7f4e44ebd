"""Per-session memory of the last prompt, to explain prefix-cache breaks.

Algorithm: an LRU map (``OrderedDict``) from session key to the last canonical prompt of the
session (``SerializedPrompt`` cut to ``max_chars``) and the time it was seen. ``observe``
compares the new prompt with the stored one (``PrefixExplainer``), then stores the new one
as most recent. Entries idle for ``ttl_s`` are dropped; since the order is the order of last
use and the clock is monotonic, expired entries are always at the old end, so expiry costs
O(expired). Beyond ``max_sessions`` entries or ``max_total_chars`` of kept text, the least
recently used entries are dropped.

Parameters: ``max_sessions``, ``ttl_s``, ``max_chars`` (per prompt), ``max_total_chars``
(memory bound: Python keeps ASCII text at one byte per character), and an injected
monotonic ``clock``. Not thread-safe: the gateway calls it from its event loop only.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from gateway.rewrite.explain import PrefixBreak, PrefixExplainer
from gateway.rewrite.serialize import SerializedPrompt

Clock = Callable[[], float]


class PrefixTracker(Protocol):
    """What the pipeline needs: explain the new prompt of a session and remember it."""

    def observe(self, session: str, prompt: SerializedPrompt) -> PrefixBreak | None: ...


@dataclass(slots=True)
class _Entry:
    prompt: SerializedPrompt
    seen: float


class MemoryPrefixStore:
    """In-process ``PrefixTracker``: bounded LRU with idle expiry."""

    def __init__(
        self,
        explainer: PrefixExplainer,
        *,
        clock: Clock,
        max_sessions: int = 10_000,
        ttl_s: float = 1800.0,
        max_chars: int = 32_768,
        max_total_chars: int = 64 * 1024 * 1024,
    ) -> None:
        if max_sessions < 1 or ttl_s <= 0 or max_chars < 1 or max_total_chars < max_chars:
            raise ValueError(
                "need max_sessions >= 1, ttl_s > 0, max_chars >= 1 and max_total_chars >= max_chars"
            )
        self._explainer = explainer
        self._clock = clock
        self._max_sessions = max_sessions
        self._ttl_s = ttl_s
        self._max_chars = max_chars
        self._max_total_chars = max_total_chars
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._total_chars = 0

    def observe(self, session: str, prompt: SerializedPrompt) -> PrefixBreak | None:
        """The break of ``prompt`` against the session's previous one; then remember it."""
        now = self._clock()
        self._expire(now)
        previous = self._pop(session)
        explanation = None if previous is None else self._explainer.explain(previous, prompt)
        kept = prompt.cut(self._max_chars)
        self._entries[session] = _Entry(kept, now)
        self._total_chars += len(kept.text)
        self._evict()
        return explanation

    def forget(self, session: str) -> None:
        self._pop(session)

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def total_chars(self) -> int:
        return self._total_chars

    def _pop(self, session: str) -> SerializedPrompt | None:
        entry = self._entries.pop(session, None)
        if entry is None:
            return None
        self._total_chars -= len(entry.prompt.text)
        return entry.prompt

    def _expire(self, now: float) -> None:
        while self._entries:
            session, entry = next(iter(self._entries.items()))
            if now - entry.seen < self._ttl_s:
                return
            self._pop(session)

    def _evict(self) -> None:
        while len(self._entries) > self._max_sessions or self._total_chars > self._max_total_chars:
            self._pop(next(iter(self._entries)))
