"""Cheap difficulty features of a chat request, each a number in [0, 1].

Algorithm: take the last user message (the ask), keep a window of its first
``scan_head_chars`` and last ``scan_tail_chars`` characters (instructions sit at the start or
the end; a pasted document in the middle adds cost, not signal), lower-case it and split it
into a set of ASCII words (punctuation becomes spaces). Each concept feature adds points for
its cues and is capped at 1:

- ``code``: a code fence 0.5; a stack-trace marker 0.5; each distinct code keyword
  (``def``, ``println``, ``nullptr`` ...) 0.12; each programming term (``python``, ``mutex``,
  ``refactor`` ...) 0.08; symbol density of ``{}();=<>[]`` times 4, at most 0.4.
- ``math``: each LaTeX command 0.25 (at most 0.75); ``$`` math 0.3; each distinct maths
  symbol (``∫ ≤ √`` ...) 0.2; each equation or power with digits (``= 11``, ``^2``) 0.1 (at
  most 0.3); each distinct maths word (``prove``, ``derive``, ``eigenvalue`` ...) 0.2.
- ``multistep``: "step by step" 0.5; "walk (me) through" 0.3; first...then 0.3; each other
  sequencing word (``then``, ``finally`` ...) 0.15; each numbered line 0.1 (at most 0.5); each
  question mark beyond the first 0.15.
- ``constraints``: each distinct constraint word (``must``, ``exactly``, ``without``
  ...) 0.15; each of "at least", "at most", "no more than", "do not" 0.15; each bullet line
  0.1 (at most 0.5).
- ``reasoning``: each distinct analysis word (``why``, ``justify``, ``trade-off`` ...) 0.15.
- ``simple``: each distinct easy-task cue (``translate``, ``rename``, "one sentence" ...) 0.25.

and three request-shape features:

- ``length``: ln(1 + prompt tokens) / ln(1 + ``length_full_tokens``);
- ``output``: requested max tokens on a log scale, 0 up to ``output_low_tokens`` and 1 from
  ``output_full_tokens`` (0 when the client gave none);
- ``depth``: (user turns - 1) / ``depth_full_turns``.

Cost is bounded by the window: about 60-90 us whatever the prompt length.
"""

from __future__ import annotations

import math
import re
from dataclasses import astuple, dataclass, fields
from typing import NamedTuple

from gateway.classify import vocabulary as v

_PUNCT = b"()[]{}<>.,;:=+-*/\\\"'`_#!?&|%$@^~\u00a0"[:33]
_TO_SPACE = bytes.maketrans(_PUNCT, b" " * len(_PUNCT))
# Regexes that start with a literal, so the scan jumps between candidates in C.
_LATEX = re.compile(r"\\[a-zA-Z]{2,}")
_EQUALS_NUMBER = re.compile(r"=\s*[-(]?\s*\d")
_POWER = re.compile(r"\^\s*[-({]?\d")


@dataclass(frozen=True, slots=True)
class FeatureConfig:
    """Window and scale parameters of the features (see the module docstring)."""

    scan_head_chars: int = 2000
    scan_tail_chars: int = 1000
    length_full_tokens: int = 8192
    output_low_tokens: int = 256
    output_full_tokens: int = 8192
    depth_full_turns: int = 8

    def __post_init__(self) -> None:
        if self.scan_head_chars < 1 or self.scan_tail_chars < 0:
            raise ValueError("scan_head_chars must be >= 1 and scan_tail_chars >= 0")
        if self.length_full_tokens < 2 or self.depth_full_turns < 1:
            raise ValueError("length_full_tokens must be >= 2 and depth_full_turns >= 1")
        if not 1 <= self.output_low_tokens < self.output_full_tokens:
            raise ValueError("need 1 <= output_low_tokens < output_full_tokens")


@dataclass(frozen=True, slots=True)
class Features:
    """Feature values of one request, each in [0, 1]."""

    length: float
    code: float
    math: float
    multistep: float
    constraints: float
    reasoning: float
    simple: float
    output: float
    depth: float

    def values(self) -> tuple[float, ...]:
        return astuple(self)


FEATURE_NAMES: tuple[str, ...] = tuple(f.name for f in fields(Features))


class _Window(NamedTuple):
    text: str
    lower: str
    words: frozenset[bytes]


def extract_features(
    ask: str,
    *,
    prompt_tokens: int,
    max_tokens: int | None,
    user_turns: int,
    config: FeatureConfig = FeatureConfig(),
) -> Features:
    """The features of a request whose last user message is ``ask``."""
    window = _window(ask, config)
    return Features(
        length=_log_scale(prompt_tokens, 0, config.length_full_tokens),
        code=_code(window),
        math=_math(window),
        multistep=_multistep(window),
        constraints=_constraints(window),
        reasoning=_cap(0.15 * len(window.words & v.REASONING)),
        simple=_simple(window),
        output=_output(max_tokens, config),
        depth=_cap((max(user_turns, 1) - 1) / config.depth_full_turns),
    )


def _window(ask: str, config: FeatureConfig) -> _Window:
    head, tail = config.scan_head_chars, config.scan_tail_chars
    text = ask if len(ask) <= head + tail else ask[:head] + "\n" + ask[len(ask) - tail :]
    lower = text.lower()
    words = frozenset(lower.encode("utf-8", "surrogatepass").translate(_TO_SPACE).split())
    return _Window(text, lower, words)


def _cap(points: float) -> float:
    return min(1.0, points)


def _log_scale(value: int, low: int, full: int) -> float:
    if value <= low:
        return 0.0
    return _cap(math.log1p(value - low) / math.log1p(full - low))


def _output(max_tokens: int | None, config: FeatureConfig) -> float:
    if max_tokens is None or max_tokens <= config.output_low_tokens:
        return 0.0
    span = math.log(config.output_full_tokens / config.output_low_tokens)
    return _cap(math.log(max_tokens / config.output_low_tokens) / span)


def _code(w: _Window) -> float:
    points = 0.5 if "```" in w.text else 0.0
    if any(marker in w.lower for marker in v.TRACE_MARKERS):
        points += 0.5
    points += 0.12 * len(w.words & v.CODE_KEYWORDS) + 0.08 * len(w.words & v.CODE_TERMS)
    symbols = sum(map(w.text.count, "{}();=<>[]"))
    return _cap(points + min(0.4, 4.0 * symbols / max(len(w.text), 1)))


def _math(w: _Window) -> float:
    points = min(0.75, 0.25 * len(_LATEX.findall(w.text)))
    if w.text.count("$") >= 2:
        points += 0.3
    if not w.text.isascii():
        points += 0.2 * len(v.MATH_SYMBOLS.intersection(w.text))
    equations = len(_EQUALS_NUMBER.findall(w.text)) + len(_POWER.findall(w.text))
    points += min(0.3, 0.1 * equations)
    return _cap(points + 0.2 * len(w.words & v.MATH_WORDS))


def _multistep(w: _Window) -> float:
    words = w.words
    points = 0.5 if b"step" in words and "step by step" in w.lower.replace("-", " ") else 0.0
    if b"walk" in words and b"through" in words:
        points += 0.3
    if b"first" in words and b"then" in words:
        points += 0.3
    points += 0.15 * len(words & v.SEQUENCE_WORDS)
    numbered = sum(map(w.text.count, v.NUMBERED_LINE_STARTS))
    points += min(0.5, 0.1 * numbered) + 0.15 * max(0, w.text.count("?") - 1)
    return _cap(points)


def _constraints(w: _Window) -> float:
    points = 0.15 * len(w.words & v.CONSTRAINT_WORDS)
    phrases = sum(1 for gate, phrase in v.CONSTRAINT_PHRASES if gate in w.words and phrase in w.lower)
    bullets = sum(map(w.text.count, v.BULLET_LINE_STARTS))
    return _cap(points + 0.15 * phrases + min(0.5, 0.1 * bullets))


def _simple(w: _Window) -> float:
    cues = len(w.words & v.SIMPLE_WORDS)
    cues += sum(1 for gate, phrase in v.SIMPLE_PHRASES if gate in w.words and phrase in w.lower)
    return _cap(0.25 * cues)
