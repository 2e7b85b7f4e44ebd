"""Summary keys, the summary request, and the bounded summary cache (injected clock)."""

from __future__ import annotations

import pytest

from gateway.rewrite.summary_cache import (
    SummaryCache,
    summary_key,
    summary_request,
    transcript,
)
from tests.unit.rewrite.compress_helpers import msg


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


DROPPED = [msg("user", "Order 3 boxes"), msg("assistant", "Done, ORD-1.")]


def test_key_depends_on_scope_and_exact_messages() -> None:
    key = summary_key("s1", DROPPED)
    assert key == summary_key("s1", [dict(m) for m in DROPPED])
    assert key != summary_key("s2", DROPPED)
    assert key != summary_key("s1", [DROPPED[0], msg("assistant", "Done, ORD-2.")])
    assert key != summary_key("s1", DROPPED[:1])


def test_request_asks_to_keep_facts_and_carries_the_transcript() -> None:
    body = summary_request(DROPPED, max_tokens=128)
    assert body["max_tokens"] == 128
    assert body["stream"] is False
    assert "exactly as written" in body["messages"][0]["content"]
    assert body["messages"][1]["content"] == transcript(DROPPED)
    assert transcript(DROPPED) == "user: Order 3 boxes\n\nassistant: Done, ORD-1."


def test_entries_expire_when_idle() -> None:
    clock = Clock()
    cache = SummaryCache(clock=clock, ttl_s=10)
    cache.put("a", "summary a")
    clock.now = 9
    assert cache.get("a") is not None  # use refreshes the entry
    clock.now = 18
    entry = cache.get("a")
    assert entry is not None
    assert entry.text == "summary a"
    clock.now = 28
    assert cache.get("a") is None
    assert len(cache) == 0


def test_least_recently_used_go_first_by_count_and_size() -> None:
    clock = Clock()
    cache = SummaryCache(clock=clock, max_entries=2, max_total_chars=10)
    cache.put("a", "aaaa")
    cache.put("b", "bbbb")
    cache.get("a")
    cache.put("c", "cc")
    assert cache.get("b") is None
    assert cache.get("a") is not None
    cache.put("d", "dddddddd")  # 4 + 2 + 8 > 10: the oldest ones leave
    assert cache.get("d") is not None
    assert len(cache) == 1


def test_failed_summaries_are_remembered_without_text() -> None:
    cache = SummaryCache(clock=Clock())
    cache.put("a", None, ("42",))
    entry = cache.get("a")
    assert entry is not None
    assert entry.text is None
    assert entry.missing == ("42",)


def test_bounds_are_validated() -> None:
    with pytest.raises(ValueError, match="max_entries"):
        SummaryCache(clock=Clock(), max_entries=0)
