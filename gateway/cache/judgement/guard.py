"""The false-hit guard: refuse a semantic match whose wording differs in meaning-bearing detail.

Embeddings place "turn on the lights" next to "turn off the lights" and "flights to Paris"
next to "flights to Rome". Before a semantic hit is served, both questions are reduced to
the facts that flip an answer and the hit is refused unless these agree:
- negation: the count of negators (not, no, never, n't, without, ...), compared as parity
  plus presence, so "does not" vs "doesn't" agree and "X" vs "not X" do not;
- polarity: for each antonym group (on/off, enable/disable, before/after, max/min, ...) the
  side each text takes; texts that take different sides disagree;
- numbers: every numeral (digits, decimals, number words), as a multiset;
- dates and times: month and weekday names, relative days (today, tomorrow, ...), times;
- units and currencies: the set of unit words;
- named entities: capitalised words (not a common word at the start of a sentence),
  acronyms and alphanumerics; each entity of one text must occur in the other (ignoring
  case), so "France's capital" matches "capital of France" but not "capital of Spain".
Parameters: none; the word lists below are the knowledge. Precision first: a refused
paraphrase costs one backend call, a wrong answer costs the user.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from dataclasses import dataclass

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'\-]*|\d+(?:[.,:]\d+)*(?:st|nd|rd|th|am|pm|%)?")
_SENTENCE_END = re.compile(r"[.!?:;\n]\s*")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_NEGATORS = _words(
    """not no never none nothing nobody neither nor without cannot can't won't don't doesn't
    didn't isn't aren't wasn't weren't shouldn't wouldn't couldn't mustn't hasn't haven't
    hadn't unable avoid except excluding non"""
)

_POLARITY: tuple[tuple[frozenset[str], frozenset[str]], ...] = tuple(
    (_words(a), _words(b))
    for a, b in (
        (
            "on enable enabled enabling activate start starting begin",
            "off disable disabled disabling deactivate stop stopping end finish",
        ),
        (
            "increase increasing raise more higher larger bigger",
            "decrease decreasing lower less fewer smaller reduce",
        ),
        ("add adding insert", "remove removing delete deleting"),
        ("before earlier", "after later"),
        ("open opening", "close closing"),
        ("buy buying purchase", "sell selling"),
        ("max maximum most", "min minimum least"),
        ("import importing", "export exporting"),
        ("upload uploading", "download downloading"),
        ("encrypt encrypting encryption", "decrypt decrypting decryption"),
        ("install installing", "uninstall uninstalling"),
        ("lock locking", "unlock unlocking"),
        ("allow allowing permit accept", "deny block blocking reject forbid"),
        ("include including", "exclude"),
        ("hot warm", "cold cool"),
        ("true", "false"),
        ("up upward", "down downward"),
        ("in inside", "out outside"),
        ("left", "right"),
        ("north", "south"),
        ("east", "west"),
        ("fast faster quick", "slow slower"),
        ("best", "worst"),
        ("good better", "bad worse"),
        ("pros advantages benefits", "cons disadvantages drawbacks"),
        ("connect connecting", "disconnect disconnecting"),
        ("subscribe", "unsubscribe"),
        ("mute", "unmute"),
        ("follow", "unfollow"),
        ("show", "hide"),
        ("push", "pull"),
        ("send sending", "receive receiving"),
        ("arrive arrival", "depart departure leave"),
        ("compress compression", "decompress decompression"),
        ("serialize serialization", "deserialize deserialization"),
        ("encode encoding", "decode decoding"),
        ("input", "output"),
        ("first", "last"),
        ("cheap cheapest", "expensive"),
        ("safe", "dangerous unsafe"),
        ("legal", "illegal"),
        ("healthy", "unhealthy"),
        ("private", "public"),
        ("upper uppercase", "lower lowercase"),
        ("ascending", "descending"),
        ("sync synchronous", "async asynchronous"),
        ("gain", "lose loss"),
        ("borrow", "lend"),
        ("horizontal horizontally", "vertical vertically"),
        ("long longer", "short shorter"),
        ("heavy", "light"),
    )
)

# "one" is left out: it is a pronoun far more often than a count ("which one is faster").
_COUNTS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty"
)
_NUMBER_WORDS = {
    w: str(i) for i, w in enumerate(_COUNTS.split(" ")) if w != "one"
} | {"thirty": "30", "forty": "40", "fifty": "50", "hundred": "100", "thousand": "1000",
     "million": "1000000", "billion": "1000000000", "once": "1x", "twice": "2x",
     "half": "0.5", "quarter": "0.25", "double": "2x", "triple": "3x", "single": "1",
     "dozen": "12", "first": "1st", "second": "2nd", "third": "3rd"}  # fmt: skip

_DATE_WORDS = _words(
    """january february march april june july august september october november december
    jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday
    saturday sunday today tomorrow yesterday tonight weekend weekday morning afternoon evening
    night noon midnight week month year decade century daily weekly monthly yearly annual
    annually hourly quarterly spring summer autumn winter christmas easter"""
)

_UNIT_WORDS = _words(
    """km kilometer kilometers kilometre kilometres mile miles meter meters metre metres cm mm
    inch inches foot feet ft yard yards kg kilogram kilograms gram grams g lb lbs pound pounds
    ounce ounces oz liter liters litre litres ml gallon gallons celsius fahrenheit kelvin
    degrees mph kmh kph second seconds minute minutes hour hours day days week weeks month months
    year years byte bytes kb mb gb tb kib mib gib bit bits ms dollar dollars usd eur euro euros
    gbp yen jpy rupee rupees percent watt watts kw kwh volt volts amp amps hz mhz ghz calorie
    calories kcal acre acres hectare hectares"""
)

# Capitalised at a sentence start only because of grammar: not an entity.
_COMMON = _words(
    """a an the i i'm i've i'd i'll my me we our us you your it its is are was were be been
    am do does did done can could should would will shall may might must have has had how
    what whats what's why when where who whom whose which whether if is there here this that
    these those please tell explain describe give show list write make find help let let's
    in on at for to from of by with about as and or but so then also any some all each every
    one two three is it's any hey hi hello okay ok quick simple best good new need want
    looking trying any anyone someone somebody recommend suggest compare difference define
    definition meaning summarize summarise translate create generate convert calculate
    compute check get set use using steps ways way guide tips best is are was im ive id
    should could would can't cannot don't doesn't isn't aren't not no yes"""
)

_APOSTROPHES = str.maketrans({"\u2019": "'"})  # typographic apostrophe


@dataclass(frozen=True, slots=True)
class Facts:
    """The meaning-bearing details of one text."""

    words: frozenset[str]
    negation: int
    # Per antonym group: 0 neither side, 1 the first, 2 the second, 3 both. Two texts
    # disagree when both take a side and not the same one ("in" next to nothing is fine).
    polarity: tuple[int, ...]
    numbers: tuple[tuple[str, int], ...]
    quantities: tuple[tuple[str, int], ...]  # "10 km": a number and the unit after it
    dates: frozenset[str]
    units: frozenset[str]
    entities: frozenset[str]


def facts_of(text: str) -> Facts:
    text = text.translate(_APOSTROPHES)
    tokens = _WORD.findall(text)
    lower = [t.lower().rstrip("'") for t in tokens]
    words = frozenset(lower)
    negation = sum(1 for w in lower if w in _NEGATORS or w.endswith("n't"))
    return Facts(
        words=words | {w.removesuffix("'s") for w in lower},
        negation=negation,
        polarity=tuple(_side(words, a, b) for a, b in _POLARITY),
        numbers=tuple(sorted(Counter(_numbers(lower)).items())),
        quantities=tuple(sorted(Counter(_quantities(lower)).items())),
        dates=_dates(lower) | _times(text),
        units=frozenset(_unit(w) for w in lower if w in _UNIT_WORDS),
        entities=_entities(text),
    )


REASONS = ("negation", "polarity", "number", "date", "unit", "entity")


def refusal(a: str, b: str) -> str | None:
    """Why a semantic match between ``a`` and ``b`` must not be served (None: it may)."""
    return first_disagreement(facts_of(a), facts_of(b))


def first_disagreement(fa: Facts, fb: Facts) -> str | None:
    """The first of ``REASONS`` the two texts' facts disagree on (None: they agree)."""
    found = disagreements(fa, fb)
    return next((r for r, differ in zip(REASONS, found, strict=True) if differ), None)


def disagreements(fa: Facts, fb: Facts) -> tuple[bool, ...]:
    """Per reason of ``REASONS``, whether the two texts' facts disagree on it."""
    return (
        (fa.negation > 0) != (fb.negation > 0) or fa.negation % 2 != fb.negation % 2,
        any(x != y and x and y for x, y in zip(fa.polarity, fb.polarity, strict=True)),
        fa.numbers != fb.numbers,
        fa.dates != fb.dates,
        fa.units != fb.units or fa.quantities != fb.quantities,
        not (fa.entities <= fb.words and fb.entities <= fa.words),
    )


def _side(words: frozenset[str], first: frozenset[str], second: frozenset[str]) -> int:
    return (1 if words & first else 0) | (2 if words & second else 0)


def _numbers(lower: list[str]) -> list[str]:
    out = []
    for w in lower:
        if w[0].isdigit():
            out.append(w.replace(",", ""))
        elif w in _NUMBER_WORDS:
            out.append(_NUMBER_WORDS[w])
    return out


# Words that move a date ("this weekend" vs "next weekend"), counted next to a date word.
_DATE_SHIFTS = frozenset({"this", "next", "last", "previous", "coming", "past", "ago", "every"})


def _date_word(word: str) -> str | None:
    if word in _DATE_WORDS:
        return word
    if word.endswith("s") and word[:-1] in _DATE_WORDS:  # "weekdays", "mondays"
        return word[:-1]
    return None


def _dates(lower: list[str]) -> frozenset[str]:
    found = {d for d in map(_date_word, lower) if d is not None}
    if found:
        found |= {w for w in lower if w in _DATE_SHIFTS}
    return frozenset(found)


def _quantities(lower: list[str]) -> list[str]:
    return [
        f"{w} {_unit(nxt)}"
        for w, nxt in itertools.pairwise(lower)
        if (w[0].isdigit() or w in _NUMBER_WORDS) and nxt in _UNIT_WORDS
    ]


_TIME = re.compile(r"\b\d{1,2}(?::\d{2})?\s*(?:am|pm)\b|\b\d{1,2}:\d{2}\b", re.IGNORECASE)


def _times(text: str) -> frozenset[str]:
    return frozenset(m.group(0).lower().replace(" ", "") for m in _TIME.finditer(text))


def _unit(word: str) -> str:
    # Singular and plural name the same unit.
    return word[:-1] if word.endswith("s") and len(word) > 3 else word


def _entities(text: str) -> frozenset[str]:
    found: set[str] = set()
    for sentence in _SENTENCE_END.split(text):
        for i, token in enumerate(_WORD.findall(sentence)):
            word = token.lower().rstrip("'").removesuffix("'s")
            if not word or word[0].isdigit():
                continue
            capital = token[0].isupper() or any(c.isupper() for c in token[1:])
            acronym = token.isupper() and len(token) > 1
            alnum = any(c.isdigit() for c in token)
            if not (capital or alnum):
                continue
            if i == 0 and not (acronym or alnum) and word in _COMMON:
                continue
            if word in _COMMON and not acronym:
                continue
            found.add(word)
    return frozenset(found)
