"""Deterministic pseudo-tokeniser shared by the simulator and the load generator.

Algorithm: a regular expression splits text into pieces the way a BPE vocabulary roughly does
(an optional leading space plus up to five word characters, one punctuation mark, or a run of
white space), which lands near the 4 characters per token of real English tokenisers. A
piece's id is its CRC32 folded into ``VOCAB_SIZE``. Generated text is drawn from ``WORDS``
(each at most five letters, emitted with a leading space), so ``count_tokens`` of generated
text equals the number of tokens generated.

Parameters: ``VOCAB_SIZE`` (ids are in ``[0, VOCAB_SIZE)``), ``WORDS`` (output vocabulary).
"""

from __future__ import annotations

import hashlib
import random
import re
import zlib
from collections.abc import Iterator

VOCAB_SIZE = 1 << 17

_PIECE = re.compile(r" ?\w{1,5}| ?[^\w\s]|\s+")

WORDS: tuple[str, ...] = (
    "the", "a", "model", "token", "cache", "queue", "batch", "fast", "slow", "data",
    "answer", "is", "of", "to", "and", "in", "that", "it", "for", "on", "with", "as",
    "this", "by", "we", "can", "will", "be", "are", "from", "or", "an", "which", "when",
    "then", "each", "time", "step", "first", "next", "last", "value", "point", "lead",
    "load", "route", "pool", "node", "path", "graph", "order", "sum", "sort", "list",
    "map", "key", "page", "block", "store", "read", "write", "plan", "sign", "note",
)  # fmt: skip


def pieces(text: str) -> list[str]:
    """Split ``text`` into token pieces; ``"".join(pieces(t)) == t``."""
    return _PIECE.findall(text)


def count_tokens(text: str) -> int:
    """Number of pseudo-tokens in ``text``."""
    return len(_PIECE.findall(text))


def encode(text: str) -> list[int]:
    """Token ids of ``text`` (stable across processes and runs)."""
    return [zlib.crc32(p.encode()) % VOCAB_SIZE for p in _PIECE.findall(text)]


def output_seed(prompt: str, seed: int) -> int:
    """A stable 64-bit seed from a prompt and a request seed."""
    digest = hashlib.blake2b(f"{seed}\x00{prompt}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def generate(prompt: str, seed: int, n_tokens: int) -> Iterator[str]:
    """Yield ``n_tokens`` output pieces, deterministic for ``(prompt, seed)``.

    A period ends a sentence every few words so the text reads like text.
    """
    rng = random.Random(output_seed(prompt, seed))
    words = WORDS
    for i in range(n_tokens):
        if i and rng.random() < 0.08:
            yield "."
        else:
            yield " " + words[rng.randrange(len(words))]


def _known_pieces() -> dict[int, str]:
    """Ids of the pieces generated text is made of (each word with and without its space)."""
    known = {}
    for piece in (".", *WORDS, *(" " + w for w in WORDS)):
        known[zlib.crc32(piece.encode()) % VOCAB_SIZE] = piece
    return known


_KNOWN = _known_pieces()


def decode(ids: list[int]) -> str:
    """Text of token ids: generated text comes back as it was; any other id as ``<id>``."""
    return "".join(_KNOWN.get(i, f"<{i}>") for i in ids)


def token_ids(value: object) -> list[int] | None:
    """``value`` as token ids when it is a list of whole numbers (``7`` or ``7.0``: vLLM reads
    a JSON number with no fraction as an integer), else None."""
    if not isinstance(value, list):
        return None
    ids = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, int | float):
            return None
        if isinstance(item, float) and not item.is_integer():
            return None
        ids.append(int(item))
    return ids
