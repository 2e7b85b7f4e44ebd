"""Length classes of a prompt: short, medium or long, from two token thresholds.

A prompt of ``tokens`` prompt tokens is ``short`` below ``medium_from``, ``long`` from
``long_from`` on, ``medium`` in between. The class is about prefill cost (prompt tokens);
the completion budget is a separate feature of the difficulty score. Defaults: 512 and 4,096
tokens, roughly a paragraph-sized chat turn and a document-sized one.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class LengthClass(StrEnum):
    SHORT = "short"
    MEDIUM = "medium"
    LONG = "long"


@dataclass(frozen=True, slots=True)
class LengthThresholds:
    """Token counts where ``medium`` and ``long`` start; must increase."""

    medium_from: int = 512
    long_from: int = 4096

    def __post_init__(self) -> None:
        if not 0 < self.medium_from < self.long_from:
            raise ValueError(
                "length thresholds must increase: 0 < medium_from < long_from "
                f"(got medium_from={self.medium_from}, long_from={self.long_from})"
            )


def length_class(tokens: int, thresholds: LengthThresholds = LengthThresholds()) -> LengthClass:
    """The class of a prompt of ``tokens`` tokens."""
    if tokens >= thresholds.long_from:
        return LengthClass.LONG
    if tokens >= thresholds.medium_from:
        return LengthClass.MEDIUM
    return LengthClass.SHORT
