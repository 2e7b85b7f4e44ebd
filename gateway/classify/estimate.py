"""Fast token estimate: a linear model over byte-class counts, calibrated on real BPE counts.

Algorithm: encode the text as UTF-8, map every byte to a class with one ``bytes.translate``
(letter or other ASCII, punctuation, digit, space, newline, non-ASCII), count the classes
with ``bytes.count`` and whitespace-separated words with ``bytes.split``, then

    tokens = a*visible + b*words + c*punct + d*newlines + e*digits + f*non_ascii_bytes

where ``visible`` counts ASCII bytes that are not whitespace (punctuation and digits
included). Everything runs in C; a 1,000-token prompt costs about 20-30 us.

Calibration (``EstimateCalibration`` defaults): weighted least squares (weights 1/y, i.e.
minimising relative error), no intercept, against OpenAI's ``cl100k_base`` counts on 287
chunks of 600-5,000 characters: English prose (Python docstrings, Debian and Node.js
Markdown docs, licences) and code (Python, C headers, JavaScript, Go, Rust, JSON). Result:
mean absolute error 5.6% per chunk (English 4%, Markdown 5%, Python 7%, C 8%, JSON 8%),
95th percentile 14%, total bias -1%. Against ``o200k_base`` the error is the same, against
the DeepSeek-V3 tokenizer 7.5% (it counts ~6% more), against Anthropic's legacy tokenizer
9.6%. Outliers are text unlike both (ROT13, all-caps licences, whitespace-aligned tables).
The script is ``tests/unit/classify/calibrate_estimate.py``.

Non-ASCII text was not in that corpus: ``f`` = 0.3 per non-ASCII byte is set from a few
hand-checked sentences (about 0.9 token per CJK character, where cl100k gives ~1.1 and
o200k ~0.7; about 0.6 per Cyrillic letter, where cl100k gives ~0.5). Accented Latin text
(French, German) is underestimated by 15-30%, as those words split into more tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from gateway.classify.messages import Message
from gateway.classify.tokens import ChatOverhead, count_chat

_PUNCT = b"()[]{}<>.,;:=+-*/\\\"'`_#!?&|%$@^~"


def _class_table() -> bytes:
    table = bytearray(b"a" * 256)
    for byte in _PUNCT:
        table[byte] = ord("p")
    for byte in b"0123456789":
        table[byte] = ord("d")
    for byte in b" \t\r\x0b\x0c":
        table[byte] = ord("s")
    table[ord("\n")] = ord("n")
    for byte in range(128, 256):
        table[byte] = ord("x")
    return bytes(table)


_CLASSES = _class_table()


class TextCounts(NamedTuple):
    """Byte-class counts of one text."""

    visible: int  # ASCII bytes that are not whitespace
    words: int  # whitespace-separated runs
    punct: int
    newlines: int
    digits: int
    non_ascii: int  # bytes >= 0x80 of the UTF-8 encoding


@dataclass(frozen=True, slots=True)
class EstimateCalibration:
    """Coefficients of the estimate (tokens per counted unit); see the module docstring."""

    visible: float = 0.1468
    words: float = 0.3179
    punct: float = 0.4656
    newlines: float = 1.0947
    digits: float = 0.6550
    non_ascii: float = 0.3

    def __post_init__(self) -> None:
        for name in self.__slots__:
            if not 0.0 <= getattr(self, name) <= 10.0:
                raise ValueError(f"EstimateCalibration.{name} must be in [0, 10]")


def text_counts(text: str) -> TextCounts:
    """Count the byte classes of ``text`` (surrogates are kept, not rejected)."""
    raw = text.encode("utf-8", "surrogatepass")
    classes = raw.translate(_CLASSES)
    spaces = classes.count(b"s")
    newlines = classes.count(b"n")
    non_ascii = 0 if text.isascii() else classes.count(b"x")
    return TextCounts(
        visible=len(raw) - spaces - newlines - non_ascii,
        words=len(raw.split()),
        punct=classes.count(b"p"),
        newlines=newlines,
        digits=classes.count(b"d"),
        non_ascii=non_ascii,
    )


def estimate_tokens(text: str, calibration: EstimateCalibration = EstimateCalibration()) -> int:
    """Estimated BPE tokens of ``text``: at least 1 for any non-empty text."""
    if not text:
        return 0
    c = text_counts(text)
    k = calibration
    value = (
        k.visible * c.visible
        + k.words * c.words
        + k.punct * c.punct
        + k.newlines * c.newlines
        + k.digits * c.digits
        + k.non_ascii * c.non_ascii
    )
    return max(1, int(value + 0.5))


@dataclass(frozen=True, slots=True)
class EstimateCounter:
    """``TokenCounter`` backed by ``estimate_tokens``; needs no tokenizer file."""

    overhead: ChatOverhead = field(default_factory=ChatOverhead)
    calibration: EstimateCalibration = field(default_factory=EstimateCalibration)

    @property
    def exact(self) -> bool:
        return False

    def count(self, text: str) -> int:
        return estimate_tokens(text, self.calibration)

    def count_messages(self, messages: Sequence[Message]) -> int:
        return count_chat(self.count, messages, self.overhead)
