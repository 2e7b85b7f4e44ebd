"""The bounded map with idle expiry, on a hand-driven clock."""

from __future__ import annotations

import pytest

from gateway.ttl_lru import TtlLru


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_oldest_written_goes_first_beyond_max() -> None:
    lru: TtlLru[str, int] = TtlLru(2, 60.0, Clock())
    lru.put("a", 1)
    lru.put("b", 2)
    lru.put("a", 3)  # a is now the youngest
    lru.put("c", 4)
    assert (lru.get("a"), lru.get("b"), lru.get("c")) == (3, None, 4)
    assert len(lru) == 2


def test_idle_entries_expire_and_reads_do_not_refresh() -> None:
    clock = Clock()
    lru: TtlLru[str, int] = TtlLru(10, 10.0, clock)
    lru.put("a", 1)
    clock.now = 5.0
    lru.put("b", 2)
    assert lru.get("a") == 1
    clock.now = 10.0
    assert lru.get("a") is None  # written at 0, idle 10 s
    assert lru.get("b") == 2
    clock.now = 15.0
    assert lru.get("b") is None
    assert len(lru) == 0


def test_pop() -> None:
    lru: TtlLru[str, int] = TtlLru(2, 1.0, Clock())
    lru.put("a", 1)
    assert lru.pop("a") == 1
    assert lru.pop("a") is None


@pytest.mark.parametrize(("max_entries", "ttl_s"), [(0, 1.0), (1, 0.0)])
def test_bad_settings_refused(max_entries: int, ttl_s: float) -> None:
    with pytest.raises(ValueError, match="need"):
        TtlLru(max_entries, ttl_s, Clock())
