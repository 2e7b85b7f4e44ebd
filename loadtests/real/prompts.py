"""Prompts of a known length for real servers and the simulator alike.

``filler(n)`` is ``n`` short common English words, each one token for Gemma's tokenizer and
for the simulator's (at most five letters), after a random 32-hex nonce so that no earlier
prompt's cached prefix shortens the prefill (``nonce=False`` for prompts meant to repeat).
"""

from __future__ import annotations

import uuid

WORDS = ("river", "stone", "cloud", "lamp", "paper", "green", "house", "bread", "water", "light")


def filler(n: int, *, nonce: bool = True) -> str:
    text = " ".join(WORDS[i % len(WORDS)] for i in range(n))
    return f"{uuid.uuid4().hex} {text}" if nonce else text
