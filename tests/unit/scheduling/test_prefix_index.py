"""The approximate prefix index: chained block hashes, per-replica LRU, leading-run matches."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.scheduling.prefix_index import PrefixIndex, block_hashes

SYSTEM = "You are the support assistant of Acme. " * 20  # 780 chars


def test_partial_last_block_is_not_hashed() -> None:
    assert len(block_hashes("x" * 99, 10)) == 9
    assert block_hashes("short", 10) == ()


@given(st.text(min_size=0, max_size=300), st.text(min_size=0, max_size=300))
def test_equal_prefix_blocks_hash_equal(common: str, tail: str) -> None:
    a = block_hashes(common + tail, 16)
    b = block_hashes(common, 16)
    assert a[: len(b)] == b


def test_a_changed_early_block_changes_every_later_hash() -> None:
    a = block_hashes("A" + SYSTEM, 32)
    b = block_hashes("B" + SYSTEM, 32)
    assert not set(a) & set(b)  # chained: an edit at the head breaks the whole prefix


def test_matches_are_the_leading_run_per_backend() -> None:
    index = PrefixIndex(blocks_per_backend=1000)
    first = block_hashes(SYSTEM + "Question one?", 64)
    second = block_hashes(SYSTEM + "A different question entirely, much longer", 64)
    index.record("a", first)
    got = index.matches(second, ["a", "b"])
    shared = len(SYSTEM) // 64
    assert got["b"] == 0.0
    assert got["a"] == shared / len(second)


def test_lru_forgets_the_oldest_blocks_first() -> None:
    index = PrefixIndex(blocks_per_backend=4)
    old, new = (1, 2, 3), (7, 8, 9)
    index.record("a", old)
    index.record("a", new)
    assert index.size("a") == 4
    assert index.matches(new, ["a"])["a"] == 1.0
    assert index.matches(old, ["a"])["a"] == 0.0  # 1 was evicted, so no leading run


def test_recording_again_refreshes_recency() -> None:
    index = PrefixIndex(blocks_per_backend=4)
    index.record("a", (1, 2))
    index.record("a", (3, 4))
    index.record("a", (1, 2))  # 1, 2 are now the youngest
    index.record("a", (5, 6))
    assert index.matches((1, 2), ["a"])["a"] == 1.0
    assert index.matches((3, 4), ["a"])["a"] == 0.0


def test_forget_drops_removed_backends() -> None:
    index = PrefixIndex(blocks_per_backend=10)
    index.record("a", (1,))
    index.record("b", (1,))
    index.forget(["b"])
    assert index.matches((1,), ["a", "b"]) == {"a": 0.0, "b": 1.0}


def test_empty_prompt_matches_nothing() -> None:
    assert PrefixIndex(10).matches((), ["a"]) == {"a": 0.0}


def test_cached_work_counts_new_blocks_and_halves_with_time() -> None:
    index = PrefixIndex(blocks_per_backend=1000, work_half_life_s=100.0)
    index.record("a", (1, 2, 3, 4), now=0.0)
    assert index.work("a", 0.0) == 4.0
    index.record("a", (1, 2, 3, 4, 5), now=0.0)  # one block was new
    assert index.work("a", 0.0) == 5.0
    assert index.work("a", 100.0) == pytest.approx(2.5)
    index.record("a", (6, 7), now=200.0)
    assert index.work("a", 200.0) == pytest.approx(5.0 / 4 + 2)
    assert index.work("b", 200.0) == 0.0
    index.forget(["b"])
    assert index.work("a", 200.0) == 0.0
