"""Do two answers to a question say the same? (sampled verification of semantic hits)

Algorithm, on the text of the cached answer and of the backend's fresh one:
1. ``identical``: equal once normalised (case folded, whitespace collapsed, punctuation at
   the ends dropped): at ``temperature: 0`` an unchanged answer comes back word for word;
2. ``numbers``: the two state different sets of numbers (a dose, a year, a price): they
   disagree however close their wording;
3. ``same_meaning``: the cosine of their embeddings (the cache's own embedder) is at least
   ``min_cosine``: the same answer worded differently;
4. ``different``: otherwise;
5. ``undecided`` (``agree`` None): wordings differ, numbers agree and no embedding could be
   had (the embedder closed or overloaded): no evidence either way.
Pure: the embeddings' cosine is computed by the caller and passed in.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from gateway.cache.judgement.guard import facts_of

Reason = Literal["identical", "same_meaning", "numbers", "different", "undecided"]

_SPACE = re.compile(r"\s+")
_EDGE_PUNCTUATION = " \t\n.,;:!?\"'`"


@dataclass(frozen=True, slots=True)
class Comparison:
    agree: bool | None  # None: cannot tell
    reason: Reason
    cosine: float | None = None


def normalised(text: str) -> str:
    return _SPACE.sub(" ", text.casefold()).strip(_EDGE_PUNCTUATION)


def compare_answers(cached: str, fresh: str, cosine: float | None, min_cosine: float) -> Comparison:
    if normalised(cached) == normalised(fresh):
        return Comparison(True, "identical", cosine)
    if _numbers(cached) != _numbers(fresh):
        return Comparison(False, "numbers", cosine)
    if cosine is None:
        return Comparison(None, "undecided")
    if cosine >= min_cosine:
        return Comparison(True, "same_meaning", cosine)
    return Comparison(False, "different", cosine)


def answer_text(answer: Mapping[str, Any]) -> str | None:
    """The text of a chat or text completion's first choice (None: none to compare)."""
    choices = answer.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    choice = choices[0]
    if "text" in choice:
        text = choice.get("text")
    else:
        message = choice.get("message")
        text = message.get("content") if isinstance(message, dict) else None
    return text if isinstance(text, str) else None


def _numbers(text: str) -> frozenset[str]:
    return frozenset(number for number, _ in facts_of(text).numbers)
