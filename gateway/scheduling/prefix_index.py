"""An approximate index of which replica holds which prompt prefixes in its KV cache.

Algorithm: the canonical prompt text is cut into blocks of ``block_chars`` characters and
each full block gets a chained hash ``h_i = hash((h_{i-1}, block_i))`` (as vLLM does over
token blocks), so equal hashes mean equal prefixes. Each replica keeps an LRU set of the
block hashes of the prompts sent to it, at most ``blocks_per_backend`` of them: the oldest
prefixes are forgotten first, as the engine evicts them. A replica's match for a new prompt
is the number of its leading blocks the replica has seen, as a fraction of the prompt's
blocks. It is approximate on purpose: no engine state is read, character blocks stand in
for token blocks, and an engine may have evicted what the index still remembers; the
consequence of a wrong guess is one prefix-cache miss, not a wrong answer.

Cached work: each replica is also charged the blocks it was sent that it did not hold yet
(new prefix material its KV cache had to take in), in a sum that halves every
``work_half_life_s`` seconds (engines evict what is not reused). The scheduler places a
prefix that no replica holds on the replica with the least of it when loads are level.

Parameters: ``block_chars``, ``blocks_per_backend``, ``work_half_life_s``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

_ROOT = 0x9E3779B9


def block_hashes(text: str, block_chars: int) -> tuple[int, ...]:
    """Chained hashes of the full blocks of ``text`` (a partial last block is not cached)."""
    hashes: list[int] = []
    parent = _ROOT
    for start in range(0, len(text) - block_chars + 1, block_chars):
        parent = hash((parent, text[start : start + block_chars]))
        hashes.append(parent)
    return tuple(hashes)


@dataclass(slots=True)
class _Work:
    amount: float
    at: float  # when ``amount`` was last brought up to date


class PrefixIndex:
    """Per-replica LRU sets of block hashes, and each replica's decayed cached work."""

    def __init__(self, blocks_per_backend: int, work_half_life_s: float = 600.0) -> None:
        self.blocks_per_backend = blocks_per_backend
        self.work_half_life_s = work_half_life_s
        self._held: dict[str, OrderedDict[int, None]] = {}
        self._work: dict[str, _Work] = {}

    def matches(self, blocks: tuple[int, ...], backends: Iterable[str]) -> Mapping[str, float]:
        """Per backend, the fraction of ``blocks`` it holds as a leading run (0 when none)."""
        if not blocks:
            return {name: 0.0 for name in backends}
        total = len(blocks)
        out: dict[str, float] = {}
        for name in backends:
            held = self._held.get(name)
            run = 0
            if held is not None:
                for h in blocks:
                    if h not in held:
                        break
                    run += 1
            out[name] = run / total
        return out

    def record(self, backend: str, blocks: tuple[int, ...], now: float = 0.0) -> None:
        """``backend`` now holds ``blocks``: the freshest entries of its LRU; the blocks it
        did not hold yet are charged to its cached work at time ``now``."""
        held = self._held.setdefault(backend, OrderedDict())
        fresh = 0
        for h in blocks:
            if h not in held:
                fresh += 1
            held[h] = None
            held.move_to_end(h)
        while len(held) > self.blocks_per_backend:
            held.popitem(last=False)
        if fresh:
            self._work[backend] = _Work(self.work(backend, now) + fresh, now)

    def work(self, backend: str, now: float) -> float:
        """The decayed number of new blocks ``backend`` took in up to ``now``."""
        work = self._work.get(backend)
        if work is None:
            return 0.0
        return float(work.amount * 0.5 ** (max(0.0, now - work.at) / self.work_half_life_s))

    def forget(self, keep: Iterable[str]) -> None:
        """Drop every backend not in ``keep`` (after a policy reload removed it)."""
        kept = set(keep)
        for name in [n for n in self._held if n not in kept]:
            del self._held[name]
        for name in [n for n in self._work if n not in kept]:
            del self._work[name]

    def size(self, backend: str) -> int:
        return len(self._held.get(backend, ()))
