"""Find volatile fragments (timestamps, dates, epoch times, UUIDs, request ids) in text.

Semantics: the built-in kinds form one regular expression (``BuiltinScanner.pattern``) whose
non-overlapping leftmost matches (``re.finditer``) are the fragments; each alternative puts
the fragment itself in a named group that maps to its kind, so context words such as
``time:`` or ``request-id:`` anchor a match without being moved. Every alternative starts at a
token start (``(?<![\\w-])``), contains an ASCII digit and spans at most three tokens before
its first digit.

Algorithm (the same result, about 20x faster than ``finditer`` on prose): a general regex
costs ~8 ns per character in CPython even when nothing matches, so we first find digit runs
with C-speed byte operations: the text is encoded to ASCII with one ``?`` per other
character (offsets stay equal), translated to a shape (digit ``0``, word character ``w``,
anything else a space) and searched with ``bytes.find``. For each digit run that is not
inside an earlier match, the pattern is tried with an anchored ``match`` at the run and at
the starts of the up to ``_TOKENS_BACK`` tokens before it (within ``_BACK_CHARS``); the
leftmost start that matches wins. Cost: two linear C passes plus ~1 µs per digit run.

Operator patterns (``NamedPattern``) are scanned one by one with ``finditer`` (a full regex
pass each); the union is made non-overlapping: leftmost first, the longer one on a tie.
Fragments that contain a line break or start/end with whitespace are trimmed or dropped,
because the note they move into is a single line.

Parameters: the enabled built-in kinds (``BUILTIN_KINDS``) and extra named patterns. Every
kind has a *cause* used by the prefix-break explanation: ``timestamp``, ``id`` or ``other``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

FragmentCause = Literal["timestamp", "id", "other"]

_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"
    r"|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
)
_WEEKDAY = (
    r"(?:Mon(?:day)?|Tue(?:s(?:day)?)?|Wed(?:nesday)?|Thu(?:r(?:s(?:day)?)?)?|Fri(?:day)?"
    r"|Sat(?:urday)?|Sun(?:day)?)"
)
_CLOCK = r"\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d{1,9})?)?"
_ZONE = r"(?:Z|[+-]\d{2}:?\d{2}|[ ]?(?:UTC|GMT))"
_NAMED_ZONE = r"(?:[ ]?(?:[+-]\d{4}|UTC|GMT|UT|[ECMP][SD]T|Z))"
_AMPM = r"(?:[ ]?[AaPp]\.?[Mm]\.?)"
_L = r"(?<![\w-])"  # a fragment never starts inside a word
_R = r"(?![\w-])"  # ... nor ends inside one

_DATE = r"\d{4}-[01]\d-[0-3]\d"
_ISO = rf"{_DATE}(?:[T ][0-2]\d:[0-5]\d(?::[0-6]\d(?:[.,]\d{{1,9}})?)?{_ZONE}?)?"
_SLASH = rf"\d{{4}}/[01]\d/[0-3]\d(?:[ T]{_CLOCK}{_ZONE}?)?"
_AT_CLOCK = rf"(?:,?[ ](?:at[ ])?{_CLOCK}{_AMPM}?{_NAMED_ZONE}?)?"
_RFC2822 = rf"(?:{_WEEKDAY},?[ ])?\d{{1,2}}[ ]{_MONTH}\.?[ ]\d{{4}}{_AT_CLOCK}"
_US = rf"(?:{_WEEKDAY},?[ ])?{_MONTH}\.?[ ]\d{{1,2}}(?:st|nd|rd|th)?,?[ ]\d{{4}}{_AT_CLOCK}"
_TIME = rf"\d{{1,2}}:[0-5]\d:[0-6]\d(?:[.,]\d{{1,9}})?{_AMPM}?(?:[ ]?(?:UTC|GMT|Z))?"
_EPOCH_KEY = (
    rf"{_L}(?i:(?:time|timestamp|ts|epoch|now|date|datetime|unix(?:[ _-]?time)?"
    r"|current[ _-]?time|(?:created|updated|issued)(?:[ _-]?at)?|iat|exp)"
    r"\"?[ ]?[:=][ ]?\"?)"
)
_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_ID_KEY = rf"{_L}(?i:(?:x-)?(?:request|req|trace|correlation)[ _-]?id\"?[ ]?[:=#][ ]?\"?)"
# Ids must hold a digit: it is what the digit-run scan keys on, and few real ids lack one.
_ID_VALUE = r"(?=[\w-]{0,63}\d)[A-Za-z0-9][\w-]{0,62}"

# (group name, kind, alternative). The named group is the fragment that moves.
_ALTERNATIVES: tuple[tuple[str, str, str], ...] = (
    ("uuid", "uuid", rf"{_L}(?P<uuid>{_UUID}){_R}"),
    ("request_id_kw", "request_id", rf"{_ID_KEY}(?P<request_id_kw>{_ID_VALUE}){_R}"),
    ("request_id", "request_id", rf"{_L}(?P<request_id>req(?:uest)?_{_ID_VALUE}){_R}"),
    ("epoch", "epoch", rf"{_EPOCH_KEY}(?P<epoch>\d{{13}}|\d{{10}})(?![\w.-])"),
    (
        "timestamp",
        "timestamp",
        rf"{_L}(?P<timestamp>{_ISO}|{_SLASH}|{_RFC2822}|{_US}|{_TIME})(?![\w+-])",
    ),
)

BUILTIN_CAUSES: Mapping[str, FragmentCause] = MappingProxyType(
    {"timestamp": "timestamp", "epoch": "timestamp", "uuid": "id", "request_id": "id"}
)
BUILTIN_KINDS: frozenset[str] = frozenset(BUILTIN_CAUSES)

_TOKENS_BACK = 3  # "Wednesday, September 21", "x-request id: 7", "current time: 1795298300"
_BACK_CHARS = 48


def _table(classes: dict[bytes, bytes], default: bytes) -> bytes:
    table = bytearray(default * 256)
    for members, cls in classes.items():
        for byte in members:
            table[byte] = cls[0]
    return bytes(table)


_LOWER = b"abcdefghijklmnopqrstuvwxyz"
_UPPER = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ"
# Token shape: digit "0", word character "w" (what `[\w-]` means under re.ASCII), else " ".
_WORDS = _table({b"0123456789": b"0", _LOWER + _UPPER + b"_-": b"w"}, b" ")
# Class shape for the C-speed prefilter: "M" a capital that can start a month name, "a"
# another letter, "_", "-", "/", ":" (also "=" and "#", the id-key separators), " ", and
# "." for anything else.
_CLASSES = _table(
    {
        b"0123456789": b"0",
        _LOWER + _UPPER: b"a",
        b"JFMASOND": b"M",
        b"_": b"_",
        b"-": b"-",
        b"/": b"/",
        b":=#": b":",
        b" ": b" ",
        b'"': b'"',
    },
    b".",
)
_MONTH_BEHIND = "|".join(
    f"(?<=Ma{{{n}}}{dot} 0)" for n in range(2, 9) for dot in ("", r"\.")
)
# Digit runs that can open a fragment, found in C: the regex is led by a literal "0" (sre
# then skips to digits at C speed) and rejects the middle of runs with (?<!00).
_CANDIDATE_RUNS = re.compile(
    (
        r"0(?<!00)(?:"
        r"0{9}(?:000)?(?!0)"  # epoch seconds or millis
        r"|000[-/]"  # ISO or slash date
        r"|0?(?::| M)"  # clock time, "21 Nov"
        r"|0*[aM_-]|(?<=[aM_-]0)"  # inside a token with letters: UUID, req_ id, id value
        r'|(?<=:0)|(?<=: 0)|(?<=:"0)|(?<=: "0)'  # "request-id: 7"
        rf"|{_MONTH_BEHIND}"  # "Nov 21"
        r")"
    ).encode()
)
_MONTH_WORD = re.compile(rf"{_MONTH}\.?")
_MONTH_HEADS = frozenset("JFMASOND")
_SPACE = 32


@dataclass(frozen=True, slots=True)
class Fragment:
    """A volatile piece of text at ``[start, end)`` of the scanned string."""

    kind: str
    start: int
    end: int
    text: str


@dataclass(frozen=True, slots=True)
class NamedPattern:
    """An operator pattern: its name is the fragment kind; the whole match is moved."""

    name: str
    regex: re.Pattern[str]
    cause: FragmentCause = "other"


@dataclass(frozen=True, slots=True)
class BuiltinScanner:
    """The enabled built-in alternatives as one anchored-match regex."""

    pattern: re.Pattern[str]
    group_kinds: Mapping[str, str]

    def scan(self, text: str, start: int, stop: int) -> list[Fragment]:
        ascii_text = text.encode("ascii", "replace")  # one byte per character
        words = ascii_text.translate(_WORDS)
        out: list[Fragment] = []
        covered = start
        for candidate in _CANDIDATE_RUNS.finditer(ascii_text.translate(_CLASSES), start, stop):
            lo = candidate.start()
            if lo < covered:
                continue
            hi = _run_end(words, lo)
            if not _plausible(text, words, lo, hi):
                continue
            match = self._match_around(text, words, lo, covered, stop)
            if match is not None:
                out.append(self._fragment(match, text))
                covered = match.end()
        return out

    def _match_around(
        self, text: str, shape: bytes, run: int, floor: int, stop: int
    ) -> re.Match[str] | None:
        for begin in _token_starts(shape, run, max(floor, run - _BACK_CHARS)):
            match = self.pattern.match(text, begin, stop)
            if match is not None:
                return match
        return None

    def _fragment(self, match: re.Match[str], text: str) -> Fragment:
        group = match.lastgroup or ""
        lo, hi = match.span(group)
        return Fragment(self.group_kinds[group], lo, hi, text[lo:hi])


def _plausible(text: str, shape: bytes, lo: int, hi: int) -> bool:
    """Whether digit run ``[lo, hi)`` can be the first digit run of some alternative.

    Mirrors ``_ALTERNATIVES`` (keep the two in step; a unit test compares the scan with
    ``finditer``). It only rejects, so a wrong ``True`` merely costs anchored matches; it
    exists because most digit runs in prompts are list numbers and versions.
    """
    size = hi - lo
    after = text[hi : hi + 1]
    if size in (10, 13) or (size == 4 and after in ("-", "/")):  # epoch, ISO, slash date
        return True
    if size <= 2 and (after == ":" or (after == " " and text[hi + 1 : hi + 2] in _MONTH_HEADS)):
        return True  # clock time, "21 Nov 2026"
    alone = lo == 0 or shape[lo - 1] == _SPACE
    begin = lo if alone else shape.rfind(b" ", max(0, lo - _BACK_CHARS), lo) + 1
    if alone and size <= 2 and _after_month(text, shape, lo):  # "Nov 21, 2026"
        return True
    if not alone or (hi < len(shape) and shape[hi] != _SPACE):  # a token with letters
        end = shape.find(b" ", hi)
        if (len(shape) if end < 0 else end) - begin == 36 or text.startswith("req", begin):
            return True  # a UUID (always a whole 36-char token) or a req_ id
    # "request-id: 7f3a": the key's "id" ends at most 4 characters (`": "`) before the value.
    return "id" in text[max(0, begin - 6) : begin].lower()


def _after_month(text: str, shape: bytes, lo: int) -> bool:
    if text[lo - 1 : lo] != " ":
        return False
    head = shape.rfind(b" ", max(0, lo - 12), lo - 2) + 1
    return _MONTH_WORD.fullmatch(text, head, lo - 1) is not None


def _run_end(shape: bytes, lo: int) -> int:
    hi = lo + 1
    while hi < len(shape) and shape[hi] == 48:  # runs are short; a loop beats a regex call
        hi += 1
    return hi


def _token_starts(shape: bytes, run: int, floor: int) -> list[int]:
    """Starts of the token holding ``run`` and of the tokens before it, leftmost first."""
    starts = [run]
    edge = run
    for _ in range(_TOKENS_BACK + 1):
        begin = shape.rfind(b" ", floor, edge) + 1 or floor
        if begin < starts[-1]:
            starts.append(begin)
        last_word = max(shape.rfind(b"w", floor, begin), shape.rfind(b"0", floor, begin))
        if last_word < 0:
            break
        edge = last_word
    starts.reverse()
    return starts


@dataclass(frozen=True, slots=True)
class VolatileMatcher:
    """The compiled scanners for one configuration; immutable, safe to share."""

    builtin: BuiltinScanner | None
    extras: tuple[NamedPattern, ...]
    causes: Mapping[str, FragmentCause]

    def find(self, text: str, start: int = 0, end: int | None = None) -> list[Fragment]:
        """Non-overlapping fragments of ``text[start:end]``, in order, offsets into ``text``."""
        stop = len(text) if end is None else min(end, len(text))
        found = [] if self.builtin is None else self.builtin.scan(text, start, stop)
        if self.extras:
            for extra in self.extras:
                found.extend(_extra_fragments(extra, text, start, stop))
            found = _non_overlapping(found)
        return found

    def cause_of(self, kind: str) -> FragmentCause:
        return self.causes.get(kind, "other")


def build_matcher(kinds: Iterable[str], extras: Iterable[NamedPattern] = ()) -> VolatileMatcher:
    """Compile the enabled built-in kinds into one regex; unknown kinds raise ``KeyError``."""
    enabled = frozenset(kinds)
    unknown = enabled - BUILTIN_KINDS
    if unknown:
        raise KeyError(", ".join(sorted(unknown)))
    chosen = [alt for alt in _ALTERNATIVES if alt[1] in enabled]
    scanner = None
    if chosen:
        pattern = re.compile("|".join(alt[2] for alt in chosen), re.ASCII)
        scanner = BuiltinScanner(pattern, MappingProxyType({alt[0]: alt[1] for alt in chosen}))
    extra_tuple = tuple(extras)
    causes: dict[str, FragmentCause] = dict(BUILTIN_CAUSES)
    causes.update({extra.name: extra.cause for extra in extra_tuple})
    return VolatileMatcher(scanner, extra_tuple, MappingProxyType(causes))


def _extra_fragments(extra: NamedPattern, text: str, start: int, stop: int) -> list[Fragment]:
    out: list[Fragment] = []
    for match in extra.regex.finditer(text, start, stop):
        fragment = _trimmed(extra.name, text, match.start(), match.end())
        if fragment is not None:
            out.append(fragment)
    return out


def _trimmed(kind: str, text: str, lo: int, hi: int) -> Fragment | None:
    # The note is one line, and whitespace around a fragment belongs to the stable text.
    piece = text[lo:hi]
    stripped = piece.strip()
    if not stripped or "\n" in stripped or "\r" in stripped:
        return None
    lo += len(piece) - len(piece.lstrip())
    return Fragment(kind, lo, lo + len(stripped), stripped)


def _non_overlapping(fragments: list[Fragment]) -> list[Fragment]:
    fragments.sort(key=lambda f: (f.start, f.start - f.end))
    out: list[Fragment] = []
    edge = -1
    for fragment in fragments:
        if fragment.start >= edge:
            out.append(fragment)
            edge = fragment.end
    return out
