"""Cheap difficulty features of a chat request, each a number in [0, 1].

Algorithm: take the last user message (the ask) and keep a window of its first
``scan_head_chars`` and last ``scan_tail_chars`` characters (a pasted document in the middle
adds cost, not signal). Split out the instruction: the window without fenced code blocks,
keeping only its paragraphs (blank-line separated) of at most ``instruction_chars``
characters; longer paragraphs are quoted material (documents, logs). Both texts are
lower-cased and split into ASCII words (punctuation becomes spaces), in one split of the
window (``scanning.py``); of the instruction's words only the cue words are kept.

Content features read the whole window, since quoted code or formulas say what the task is
about; request features read only the instruction, since "must" or "1." inside a pasted
email is not a requirement. Each adds points per cue, capped at 1:

- ``code`` (window): a code fence 0.5; a stack-trace marker 0.5; each distinct code keyword
  (``def``, ``println``, ``nullptr`` ...) 0.12; each programming term (``python``, ``mutex``
  ...) 0.08; density of ``{}();=<>[]`` times 4, at most 0.4.
- ``math`` (window): each LaTeX command 0.25 (at most 0.75); ``$`` math 0.3; each distinct
  maths symbol (``∫ ≤ √`` ...) 0.2; each equation or power with digits (``= 11``, ``^2``) 0.1
  (at most 0.3); each distinct maths word (``prove``, ``derive``, ``eigenvalue`` ...) 0.2.
- ``multistep``: "step by step" 0.5; "walk ... through" 0.3; first ... then 0.3; each other
  sequencing word (``next``, ``finally`` ...) 0.15; each numbered line 0.1 (at most 0.5);
  each question mark beyond the first 0.15.
- ``constraints``: each distinct constraint word (``must``, ``exactly``, ``without`` ...)
  0.15; each of "at least", "at most", "no more than", "do not" 0.15; each bullet line 0.1
  (at most 0.5).
- ``reasoning``: each distinct analysis or design word (``why``, ``justify``, ``implement``,
  ``trade-off`` ...) 0.15.
- ``simple``: each easy-task cue (``translate``, ``rename``, "one sentence" ...) 0.25.

and request-shape features:

- ``length``: ln(1 + prompt tokens) / ln(1 + ``length_full_tokens``);
- ``ask``: ln(1 + instruction words) / ln(1 + ``ask_full_words``): how much is being asked,
  apart from how much is quoted;
- ``output``: requested max tokens on a log scale, 0 up to ``output_low_tokens`` and 1 from
  ``output_full_tokens`` (0 when the client gave none);
- ``depth``: (user turns - 1) / ``depth_full_turns``.

The cue words are in ``vocabulary.py``. Cost is bounded by the window: 40-90 us per request.
``scan`` does the window's one lower-casing and word split (``scanning.split_window``); the
learned text model reads the same word list (``classifier.py`` passes it on), so a request is
split into words once.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, fields
from operator import attrgetter

from gateway.classify import vocabulary as v
from gateway.classify.scanning import Scan, split_window

# Deleting every other byte leaves the code symbols: one C pass counts them all.
_NOT_CODE_SYMBOLS = bytes(b for b in range(256) if b not in b"{}();=<>[]")
# Regexes that start with a literal, so the scan jumps between candidates in C.
_LATEX = re.compile(r"\\[a-zA-Z]{2,}")
_EQUALS_NUMBER = re.compile(r"=\s*[-(]?\s*\d")
_POWER = re.compile(r"\^\s*[-({]?\d")
# One scan for the line starts of both lists, numbered ones in the group: each starts with
# its only newline, so two matches never overlap and each kind's number is the sum of its
# starts' ``str.count``. The newline leads outside the group, so the scan jumps between
# newlines in C (a group in front hides it: about twenty times the instructions).
_LIST_LINE = re.compile(
    "\n(?:("
    + "|".join(re.escape(start.removeprefix("\n")) for start in v.NUMBERED_LINE_STARTS)
    + ")|"
    + "|".join(re.escape(start.removeprefix("\n")) for start in v.BULLET_LINE_STARTS)
    + ")"
)
# The gate words of the stack-trace markers: most windows have none.
_TRACE_GATES = frozenset(gate for gate, _ in v.TRACE_MARKERS)


@dataclass(frozen=True, slots=True)
class FeatureConfig:
    """Window and scale parameters of the features (see the module docstring)."""

    scan_head_chars: int = 1500
    scan_tail_chars: int = 500
    instruction_chars: int = 400
    length_full_tokens: int = 8192
    ask_full_words: int = 256
    output_low_tokens: int = 256
    output_full_tokens: int = 8192
    depth_full_turns: int = 8

    def __post_init__(self) -> None:
        if self.scan_head_chars < 1 or self.scan_tail_chars < 0 or self.instruction_chars < 1:
            raise ValueError(
                "need scan_head_chars >= 1, scan_tail_chars >= 0, instruction_chars >= 1"
            )
        if self.length_full_tokens < 2 or self.depth_full_turns < 1:
            raise ValueError("length_full_tokens must be >= 2 and depth_full_turns >= 1")
        if not 1 <= self.output_low_tokens < self.output_full_tokens:
            raise ValueError("need 1 <= output_low_tokens < output_full_tokens")


@dataclass(frozen=True, slots=True)
class Features:
    """Feature values of one request, each in [0, 1]."""

    length: float
    ask: float
    code: float
    math: float
    multistep: float
    constraints: float
    reasoning: float
    simple: float
    output: float
    depth: float

    def values(self) -> tuple[float, ...]:
        # A shallow read: dataclasses.astuple deep-copies and cost a fifth of the plan stage.
        return _FEATURE_VALUES(self)


FEATURE_NAMES: tuple[str, ...] = tuple(f.name for f in fields(Features))
_FEATURE_VALUES = attrgetter(*FEATURE_NAMES)


def extract_features(
    ask: str,
    *,
    prompt_tokens: int,
    max_tokens: int | None,
    user_turns: int,
    config: FeatureConfig = FeatureConfig(),
) -> Features:
    """The features of a request whose last user message is ``ask``."""
    return scanned_features(
        scan(ask, config),
        prompt_tokens=prompt_tokens,
        max_tokens=max_tokens,
        user_turns=user_turns,
        config=config,
    )


def scanned_features(
    window: Scan,
    *,
    prompt_tokens: int,
    max_tokens: int | None,
    user_turns: int,
    config: FeatureConfig = FeatureConfig(),
) -> Features:
    """``extract_features`` of the ask that ``window`` scanned (with the same ``config``)."""
    lines = _LIST_LINE.findall(window.instruction.text)  # numbered: the group, else ""
    numbered = len(lines) - lines.count("")
    return Features(
        length=_log_scale(prompt_tokens, 0, config.length_full_tokens),
        ask=_log_scale(window.instruction.n_words, 0, config.ask_full_words),
        code=_code(window),
        math=_math(window),
        multistep=_multistep(window, numbered),
        constraints=_constraints(window, len(lines) - numbered),
        reasoning=_cap(0.15 * len(window.instruction.cues & v.REASONING)),
        simple=_simple(window),
        output=_output(max_tokens, config),
        depth=_cap((max(user_turns, 1) - 1) / config.depth_full_turns),
    )


def scan(ask: str, config: FeatureConfig = FeatureConfig()) -> Scan:
    """The window of ``ask`` that the features read (the module docstring), split once."""
    head, tail = config.scan_head_chars, config.scan_tail_chars
    text = ask if len(ask) <= head + tail else ask[:head] + "\n" + ask[len(ask) - tail :]
    return split_window(text, config.instruction_chars)


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


def _code(window: Scan) -> float:
    w = window.whole
    points = 0.5 if "```" in w.text else 0.0
    gates = w.words & _TRACE_GATES
    if gates and any(gate in gates and marker in w.lower for gate, marker in v.TRACE_MARKERS):
        points += 0.5
    points += 0.12 * len(w.words & v.CODE_KEYWORDS) + 0.08 * len(w.words & v.CODE_TERMS)
    symbols = len(w.raw.translate(None, _NOT_CODE_SYMBOLS))
    return _cap(points + min(0.4, 4.0 * symbols / max(len(w.raw), 1)))


def _math(window: Scan) -> float:
    w = window.whole
    text = w.text
    # Each regex runs only when its first character is there (``in`` scans with memchr).
    points = min(0.75, 0.25 * len(_LATEX.findall(text))) if "\\" in text else 0.0
    if text.count("$") >= 2:
        points += 0.3
    if not text.isascii():
        points += 0.2 * len(v.MATH_SYMBOLS.intersection(text))
    equations = len(_EQUALS_NUMBER.findall(text)) if "=" in text else 0
    equations += len(_POWER.findall(text)) if "^" in text else 0
    points += min(0.3, 0.1 * equations)
    return _cap(points + 0.2 * len(w.words & v.MATH_WORDS))


def _multistep(window: Scan, numbered: int) -> float:
    w = window.instruction
    words = w.cues
    points = 0.5 if b"step" in words and "step by step" in w.lower.replace("-", " ") else 0.0
    if b"walk" in words and b"through" in words:
        points += 0.3
    if b"first" in words and b"then" in words:
        points += 0.3
    points += 0.15 * len(words & v.SEQUENCE_WORDS)
    points += min(0.5, 0.1 * numbered) + 0.15 * max(0, w.text.count("?") - 1)
    return _cap(points)


def _constraints(window: Scan, bullets: int) -> float:
    w = window.instruction
    points = 0.15 * len(w.cues & v.CONSTRAINT_WORDS)
    phrases = sum(
        1 for gate, phrase in v.CONSTRAINT_PHRASES if gate in w.cues and phrase in w.lower
    )
    return _cap(points + 0.15 * phrases + min(0.5, 0.1 * bullets))


def _simple(window: Scan) -> float:
    w = window.instruction
    cues = len(w.cues & v.SIMPLE_WORDS)
    cues += sum(1 for gate, phrase in v.SIMPLE_PHRASES if gate in w.cues and phrase in w.lower)
    return _cap(0.25 * cues)
