"""Summaries of dropped conversation runs, cached per session: keys, the prompt, the store.

Key: BLAKE2b of the session scope (``x-gateway-session``, empty when absent) and the dropped
messages' canonical JSON, so a summary is only ever reused for exactly the messages it was
written from, within the session that sent them.

Requests: ``summary_request`` asks for a summary of dropped messages; ``extend_request`` asks
to fold the messages that followed into an earlier summary, which keeps the summary pool's
input small as a conversation grows (the cut moves forward by steps, each dropping a few more
turns).

Store: an LRU map with idle expiry (``ttl_s``), at most ``max_entries`` entries and
``max_total_chars`` of summary text; injected monotonic clock. An entry records either the
summary (it passed ``check_summary``) or the facts it lost (it failed), so a failed summary is
not asked for again on every request until it expires. Not thread-safe: event loop only.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from gateway.openai.messages import Message, message_texts

SYSTEM_PROMPT = (
    "You write summaries of conversations for a model that will continue them. Summarise the "
    "conversation excerpt below in a few sentences. Keep every number, amount, date, time, "
    "identifier and name exactly as written. Do not add anything that is not in the excerpt."
)


EXTEND_PROMPT = (
    SYSTEM_PROMPT + " You are given the summary so far and the messages that followed it: "
    "write one summary covering both."
)


@dataclass(frozen=True, slots=True)
class CachedSummary:
    text: str | None  # None: the summary failed the check
    missing: tuple[str, ...] = ()
    seen: float = 0.0


def summary_key(scope: str, dropped: Sequence[Message]) -> str:
    digest = hashlib.blake2b(digest_size=16)
    digest.update(scope.encode())
    digest.update(b"\0")
    for message in dropped:
        digest.update(orjson.dumps(message, option=orjson.OPT_SORT_KEYS))
        digest.update(b"\n")
    return digest.hexdigest()


def transcript(dropped: Sequence[Message]) -> str:
    """The dropped messages as plain ``role: text`` lines (tool calls included)."""
    lines = []
    for message in dropped:
        text = "\n".join(message_texts(message))
        lines.append(f"{message.get('role', 'unknown')}: {text}")
    return "\n\n".join(lines)


def summary_request(dropped: Sequence[Message], max_tokens: int) -> dict[str, Any]:
    """The chat request body asking the summary pool for a summary (``model`` set later)."""
    return {
        "messages": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": transcript(dropped)},
        ],
        "max_tokens": max_tokens,
        "temperature": 0,
        "stream": False,
    }


def extend_request(
    summary_so_far: str, following: Sequence[Message], max_tokens: int
) -> dict[str, Any]:
    """The request asking to fold ``following`` messages into an earlier summary."""
    text = f"Summary so far:\n{summary_so_far}\n\nMessages that followed:\n{transcript(following)}"
    return {
        "messages": [
            {"role": "system", "content": EXTEND_PROMPT},
            {"role": "user", "content": text},
        ],
        "max_tokens": max_tokens,
        "temperature": 0,
        "stream": False,
    }


class SummaryCache:
    """Bounded LRU with idle expiry from key to ``CachedSummary``."""

    def __init__(
        self,
        *,
        clock: Callable[[], float],
        max_entries: int = 10_000,
        ttl_s: float = 1800.0,
        max_total_chars: int = 32 * 1024 * 1024,
    ) -> None:
        if max_entries < 1 or ttl_s <= 0 or max_total_chars < 1:
            raise ValueError("need max_entries >= 1, ttl_s > 0 and max_total_chars >= 1")
        self._clock = clock
        self._max_entries = max_entries
        self._ttl_s = ttl_s
        self._max_total_chars = max_total_chars
        self._entries: OrderedDict[str, CachedSummary] = OrderedDict()
        self._chars = 0

    def get(self, key: str) -> CachedSummary | None:
        now = self._clock()
        self._expire(now)
        entry = self._pop(key)
        if entry is None:
            return None
        self._put(key, CachedSummary(entry.text, entry.missing, now))
        return entry

    def put(self, key: str, text: str | None, missing: tuple[str, ...] = ()) -> None:
        now = self._clock()
        self._expire(now)
        self._pop(key)
        self._put(key, CachedSummary(text, missing, now))
        while len(self._entries) > self._max_entries or self._chars > self._max_total_chars:
            self._pop(next(iter(self._entries)))

    def __len__(self) -> int:
        return len(self._entries)

    def _put(self, key: str, entry: CachedSummary) -> None:
        self._entries[key] = entry
        self._chars += len(entry.text or "")

    def _pop(self, key: str) -> CachedSummary | None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._chars -= len(entry.text or "")
        return entry

    def _expire(self, now: float) -> None:
        # Entries are in order of last use and the clock is monotonic: expired ones are first.
        while self._entries:
            key, entry = next(iter(self._entries.items()))
            if now - entry.seen < self._ttl_s:
                return
            self._pop(key)
