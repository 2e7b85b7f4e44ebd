"""Prompts of a known length for real servers and the simulator alike.

``filler(n)`` is ``n`` short common English words, each one token for Gemma's tokenizer and
for the simulator's (at most five letters), after a nonce of ``NONCE_WORDS`` random words of
the same kind (10^8 choices) so that no earlier prompt's cached prefix shortens the prefill
(``nonce=False`` for prompts meant to repeat). The nonce is words, not hex, so that both
tokenizers count it alike: 32 hex digits are 7 pieces for the simulator but about 27 tokens
for Gemma, which made the simulator prefill less than the real server for the same prompt.
"""

from __future__ import annotations

import random

WORDS = ("river", "stone", "cloud", "lamp", "paper", "green", "house", "bread", "water", "light")
NONCE_WORDS = 8


def filler(n: int, *, nonce: bool = True, rng: random.Random | None = None) -> str:
    text = " ".join(WORDS[i % len(WORDS)] for i in range(n))
    if not nonce:
        return text
    pick = rng or random.SystemRandom()
    return " ".join([*(pick.choice(WORDS) for _ in range(NONCE_WORDS)), text])
