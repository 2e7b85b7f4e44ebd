"""Does a summary keep the facts of what it replaces? Numbers, dates, identifiers and names.

A summary written by a small model may drop or garble exactly what a later answer depends
on: an amount, an order number, a date, who was involved. The check extracts those facts
from the replaced text and requires every one of them in the summary:

- dates and times: ISO ``2026-11-21`` (and with a time), ``21/11/2026``, ``Nov 21, 2026``,
  ``10:30``, as written;
- identifiers: tokens mixing letters with digits, underscores or inner capitals, with inner
  ``-``, ``_`` or ``.`` (``ORD-1234``, ``user_id``, ``getUser``, ``v2.1``);
- numbers: ``42``, ``3.14``, ``1,250`` (thousands separators are ignored on both sides);
- names: runs of two or more capitalised words on one line (``Acme Corp``, ``New York``),
  leading function words such as ``The`` or ``On`` removed.

A fact is found when it occurs in the summary on word boundaries, ignoring case (a
paraphrase like "twenty" for "20" fails: that is the point). Single capitalised words are
not checked: sentence starts make them too noisy to require. Pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_DATE = re.compile(
    r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?(?:Z|[+-]\d{2}:?\d{2})?)?\b"
    r"|\b\d{1,2}/\d{1,2}/\d{2,4}\b"
    r"|\b\d{1,2}:\d{2}(?::\d{2})?\b"
    r"|\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]*\.? \d{1,2}, \d{4}\b"
)
# The lookahead keeps plain words from matching at all (a Python callback per word is slow).
_IDENTIFIER = re.compile(
    r"\b(?=[\w.-]*?(?:\d|_|[a-z][A-Z]))[A-Za-z_][A-Za-z0-9_]*(?:[-.][A-Za-z0-9_]+)*\b"
)
_NUMBER = re.compile(r"(?<![\w.])\d+(?:,\d{3})*(?:\.\d+)?(?![\w])")
_NAME = re.compile(r"\b[A-Z][\w'&]*(?:[ \t]+[A-Z][\w'&]*)+")
_FUNCTION_WORDS = frozenset(
    re.findall(
        r"\w+",
        "a an and at but by for from he her his i in it its my no of on or our she so the "
        "their then there these they this to we what when where which who why with you your",
    )
)


# What an extracted fact leaves behind: a line break, so the names on either side of it do
# not join into one name that the text never had.
_GAP = "\n"


@dataclass(frozen=True, slots=True)
class SummaryCheck:
    """The facts of the replaced text that the summary lacks (none: it passes)."""

    facts: frozenset[str]
    missing: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.missing


def extract_facts(text: str) -> frozenset[str]:
    """The numbers, dates, identifiers and multiword names of ``text``."""
    facts: set[str] = set()
    rest = _DATE.sub(lambda m: _keep(facts, m.group()), text)
    rest = _IDENTIFIER.sub(lambda m: _identifier(facts, m.group()), rest)
    facts.update(_normal_number(m.group()) for m in _NUMBER.finditer(rest))
    for match in _NAME.finditer(rest):
        words = match.group().split()
        while words and words[0].lower() in _FUNCTION_WORDS:
            words.pop(0)
        if len(words) >= 2:
            facts.add(" ".join(words))
    return frozenset(facts)


def check_summary(replaced: str, summary: str) -> SummaryCheck:
    """Whether ``summary`` keeps every fact of ``replaced``."""
    facts = extract_facts(replaced)
    haystack = _normal_text(summary)
    missing = sorted(f for f in facts if not _found(_normal_text(f), haystack))
    return SummaryCheck(facts, tuple(missing))


def _keep(facts: set[str], fact: str) -> str:
    facts.add(fact)
    return _GAP


def _identifier(facts: set[str], token: str) -> str:
    if _is_identifier(token):
        facts.add(token)
        return _GAP
    return token


def _is_identifier(token: str) -> bool:
    if not any(c.isalpha() for c in token):
        return False
    has_digit = any(c.isdigit() for c in token)
    inner_capital = any(c.isupper() for c in token[1:]) and any(c.islower() for c in token)
    return has_digit or "_" in token or inner_capital


def _normal_number(number: str) -> str:
    return number.replace(",", "")


def _normal_text(text: str) -> str:
    # Thousands separators and runs of whitespace do not change a fact.
    spaced = re.sub(r"\s+", " ", text)
    return re.sub(r"(?<=\d),(?=\d{3}\b)", "", spaced).lower()


def _found(fact: str, haystack: str) -> bool:
    """``fact`` occurs in ``haystack`` with no word character touching it on either side."""
    at = haystack.find(fact)
    while at >= 0:
        end = at + len(fact)
        before = haystack[at - 1] if at else " "
        after = haystack[end] if end < len(haystack) else " "
        if not _word_char(before) and not _word_char(after):
            return True
        at = haystack.find(fact, at + 1)
    return False


def _word_char(c: str) -> bool:
    return c.isalnum() or c == "_"
