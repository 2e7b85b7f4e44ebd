from __future__ import annotations

from loadtests.sim.kv import BlockManager, block_hashes


def test_hash_chain_covers_only_full_blocks_and_depends_on_prefix() -> None:
    a = block_hashes(list(range(40)), 16)
    b = block_hashes([99, *range(1, 40)], 16)
    assert len(a) == 2
    assert a[0] != b[0]
    assert a[1] != b[1]  # same block tokens, different prefix
    assert block_hashes(list(range(40)), 16) == a


def test_lru_evicts_oldest_free_block_and_prompt_tail_first() -> None:
    kv = BlockManager(num_blocks=4, block_size=16)
    h = block_hashes(list(range(32)), 16)
    blocks = kv.allocate(2)
    for block, bh in zip(blocks, h, strict=True):
        kv.register(block, bh)
    kv.free(blocks)
    assert kv.match_prefix(h) == blocks
    kv.allocate(2)  # the two never-used blocks are older in the free queue
    assert kv.match_prefix(h) == blocks
    kv.allocate(1)  # now the prompt's tail block goes, the shared head stays
    assert kv.match_prefix(h) == blocks[:1]
    assert kv.evictions == 1


def test_cached_blocks_taken_back_leave_the_free_queue() -> None:
    kv = BlockManager(num_blocks=2, block_size=16)
    h = block_hashes(list(range(16)), 16)
    (block,) = kv.allocate(1)
    kv.register(block, h[0])
    kv.free([block])
    assert kv.num_free == 2
    assert kv.can_allocate(1, [block])
    assert not kv.can_allocate(2, [block])
    kv.take_cached([block])
    assert kv.num_free == 1
    assert kv.usage() == 0.5
