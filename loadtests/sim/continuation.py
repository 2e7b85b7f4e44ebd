"""Continuing an answer from its partial text, as a deterministic model at temperature 0 does.

The simulated model answers prompt ``P`` with ``tokenizer.generate(P, seed, n)``. A greedy
model asked ``P + a[:k]`` (its own first ``k`` answer pieces appended to the prompt, as
``continue_final_message`` or a text completion of prompt plus partial answer sends) goes on
with ``a[k:]``. The simulator does the same for every prompt:

Algorithm (``origin``): parse the prompt's tail backwards into pieces the model emits (a
full stop, or a space and one of ``tokenizer.WORDS``); each piece boundary ``s`` of that tail
is a candidate split, shortest root first. The first ``s`` for which ``P[s:]`` equals the
first ``k`` pieces of ``generate(P[:s], seed, k)`` makes ``P[:s]`` the origin and ``k`` the
offset: the answer is that generation from piece ``k`` on. No such split: the prompt is its
own origin (offset 0), which is every prompt that does not end with generated text. Taking the
shortest root makes the rule consistent: continuing a continuation finds the first origin
again. A partial text that is not exactly the start of the model's answer (another engine's
text, a cut inside a piece) finds no split and is answered like any prompt, so nothing here
makes a continuation look right when it is not.

Parameters: ``seed`` (the request's), ``limit`` (candidate splits examined, longest first).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from loadtests.sim import tokenizer

_WORDS = frozenset(tokenizer.WORDS)
LIMIT = 4096


@dataclass(frozen=True, slots=True)
class Origin:
    """The prompt an answer was generated for, and how many of its pieces came already."""

    prompt: str
    offset: int


def tail_splits(prompt: str, limit: int = LIMIT) -> list[int]:
    """Piece boundaries of the prompt's tail of generated pieces, earliest first."""
    splits: list[int] = []
    end = len(prompt)
    while end > 0 and len(splits) < limit:
        if prompt[end - 1] == ".":
            start = end - 1
        else:
            start = prompt.rfind(" ", 0, end)
            if start < 0 or prompt[start + 1 : end] not in _WORDS:
                break
        splits.append(start)
        end = start
    return splits[::-1]


def generated_prefix(root: str, seed: int, text: str) -> int | None:
    """``k`` if ``text`` is exactly the first ``k`` pieces of the answer to ``root``."""
    done = 0
    for k, piece in enumerate(tokenizer.generate(root, seed, len(text)), start=1):
        if not text.startswith(piece, done):
            return None
        done += len(piece)
        if done == len(text):
            return k
    return None


def origin(prompt: str, seed: int, limit: int = LIMIT) -> Origin:
    """Where the answer to ``prompt`` comes from (itself, offset 0, unless it continues)."""
    for split in tail_splits(prompt, limit):
        if split == 0:
            continue
        k = generated_prefix(prompt[:split], seed, prompt[split:])
        if k is not None:
            return Origin(prompt[:split], k)
    return Origin(prompt, 0)


def continue_final_message(body: Mapping[str, Any]) -> bool:
    """vLLM's chat flags: whether the last message is left open to be continued; raises
    ``ValueError`` with vLLM's reason when the flags contradict each other."""
    if not body.get("continue_final_message"):
        return False
    if body.get("add_generation_prompt", True):
        raise ValueError(
            "Cannot set both `continue_final_message` and `add_generation_prompt` to True."
        )
    return True
