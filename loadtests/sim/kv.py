"""Paged KV-cache block manager with prefix caching and LRU eviction.

Algorithm (after vLLM's block pool): the cache is ``num_blocks`` fixed-size blocks of
``block_size`` tokens. A full block of prompt tokens is identified by a hash chain
``h_i = hash((h_{i-1}, tokens of block i))``, so equal hashes mean equal prefixes. A block
holds a reference count; at zero it joins the free queue but keeps its hash, so a later
request with the same prefix can take it back without recomputing (a prefix-cache hit).
Allocation pops the least recently freed block and evicts its hash. A sequence's blocks are
freed tail first so the end of a prompt is evicted before its shared beginning.

Parameters: ``num_blocks``, ``block_size``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

_ROOT_HASH = 0x5EED


def block_hashes(token_ids: Sequence[int], block_size: int) -> list[int]:
    """Hash chain over the full blocks of ``token_ids`` (a partial last block is skipped)."""
    hashes: list[int] = []
    parent = _ROOT_HASH
    for start in range(0, len(token_ids) - block_size + 1, block_size):
        parent = hash((parent, tuple(token_ids[start : start + block_size])))
        hashes.append(parent)
    return hashes


class BlockManager:
    """Reference-counted block pool with a hash index and an LRU free queue."""

    def __init__(self, num_blocks: int, block_size: int) -> None:
        self.num_blocks = num_blocks
        self.block_size = block_size
        self._ref = [0] * num_blocks
        self._hash_of: list[int | None] = [None] * num_blocks
        self._by_hash: dict[int, int] = {}
        # Insertion order is eviction order: the oldest freed block goes first.
        self._free: OrderedDict[int, None] = OrderedDict.fromkeys(range(num_blocks))
        self.evictions = 0

    @property
    def num_free(self) -> int:
        return len(self._free)

    def usage(self) -> float:
        """Fraction of blocks referenced by live sequences (vLLM's kv_cache_usage_perc)."""
        return 1.0 - len(self._free) / self.num_blocks

    def blocks_needed(self, num_tokens: int) -> int:
        return -(-num_tokens // self.block_size)

    def match_prefix(self, hashes: Sequence[int]) -> list[int]:
        """Blocks holding the longest cached prefix of ``hashes`` (no side effects)."""
        found: list[int] = []
        for h in hashes:
            block = self._by_hash.get(h)
            if block is None:
                break
            found.append(block)
        return found

    def can_allocate(self, num_new: int, cached: Sequence[int]) -> bool:
        """Whether ``num_new`` fresh blocks fit after taking back the ``cached`` hits."""
        idle_hits = sum(1 for b in cached if self._ref[b] == 0)
        return len(self._free) - idle_hits >= num_new

    def take_cached(self, blocks: Sequence[int]) -> None:
        for block in blocks:
            if self._ref[block] == 0:
                del self._free[block]
            self._ref[block] += 1

    def allocate(self, n: int) -> list[int]:
        """Pop ``n`` blocks from the LRU end of the free queue, evicting their hashes."""
        if n > len(self._free):
            raise RuntimeError(f"KV cache exhausted: need {n}, free {len(self._free)}")
        out: list[int] = []
        for _ in range(n):
            block, _unused = self._free.popitem(last=False)
            self._evict(block)
            self._ref[block] = 1
            out.append(block)
        return out

    def register(self, block: int, block_hash: int) -> None:
        """Publish a computed full block under its prefix hash (first writer wins)."""
        if block_hash not in self._by_hash and self._hash_of[block] is None:
            self._by_hash[block_hash] = block
            self._hash_of[block] = block_hash

    def free(self, blocks: Sequence[int]) -> None:
        for block in reversed(blocks):
            self._ref[block] -= 1
            if self._ref[block] == 0:
                self._free[block] = None

    def is_cached(self, block_hash: int) -> bool:
        return block_hash in self._by_hash

    def _evict(self, block: int) -> None:
        old = self._hash_of[block]
        if old is not None:
            del self._by_hash[old]
            self._hash_of[block] = None
            self.evictions += 1
