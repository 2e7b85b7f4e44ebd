"""Features of a (cached question, asked question) pair, for the semantic-cache verifier.

Algorithm: each text is read once into a ``View`` (lower-case word tokens, content words
lightly stemmed, operator symbols, the guard's facts); a pair then gives a fixed-length
vector of
- the cosine of the two embeddings, and the elementwise pair ``|a - b|``, ``a * b`` reduced
  to five numbers: the L1 and largest difference, the share of dimensions differing by more
  than 0.1, the share of dimensions of opposite sign and the spread of ``a * b`` (the full
  768 numbers fitted no better on held-out QQP pairs and let the model learn quirks);
- word alignment: Jaccard overlap of content words, the counts and IDF-weighted shares of
  content words found in one text only (the smaller and larger side), and whether exactly
  one content word was swapped for another (``netflix`` for ``spotify``, ``adults`` for
  ``children``; case does not matter, so lower-case names count);
- direction: two shared content words in one order around a direction word (to, into,
  from, than, in, per, vs) in one text and the other order in the other ("fahrenheit to
  celsius" against "celsius to fahrenheit");
- operators and symbols (``>``, ``<=``, ``!=``, ``+=``, ``&&``, ...) as a multiset, and
  whether the two multisets differ;
- antonyms: a swapped word pair that is a known antonym (``antonyms.py``) or differs by a
  negating prefix (``un``, ``dis``, ``in``, ``im``, ``non``, ``de``);
- word classes (``lexicon.py``): a place, person or product-variant word found in one text
  only, and whether words were added on one side only (the other's are all matched:
  "iPhone 15" against "iPhone 15 Pro");
- the guard's facts (``guard.py``): one flag per kind of disagreement (negation, polarity,
  numbers, dates, units, capitalised entities).
IDF comes with the verifier's weights (fitted on the QQP train split); a word it does not
know counts as rare. Pure functions of the texts, the vectors and the IDF table.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from gateway.cache.judgement.antonyms import PAIRS
from gateway.cache.judgement.guard import REASONS, Facts, disagreements, facts_of
from gateway.cache.judgement.lexicon import CLASS_OF
from gateway.embedding.encoder import Vectors

_TOKEN = re.compile(r"[a-z0-9_]+(?:'[a-z]+)?")
_OPERATOR = re.compile(
    r"===|!==|>>=|<<=|[<>!=+\-*/%&|^]=|&&|\|\||<<|>>|\+\+|--|->|=>|[<>=!*%&|^~+]"
)
_DIRECTION = frozenset({"to", "into", "from", "than", "in", "per", "vs", "versus", "onto", "over"})
_STOP_WORDS = """a an the i me my we our you your he she it its they them their this
    that these those is are was were be been being am do does did have has had having will
    would shall should
    can could may might must of at by for with about as on to from in into than then so
    and or but if what which who whom whose how why when where there here any some all
    each every very just also please tell explain give way ways get got
    want need know whats what's i'm im can't don't does doesn't s vs versus per over onto
    one someone anyone something anything really much many"""
_STOP = frozenset(_STOP_WORDS.split())
_NEGATING_PREFIXES = ("un", "dis", "in", "im", "ir", "il", "non", "de", "anti")

FEATURES: tuple[str, ...] = (
    "cosine",
    "cosine_squared",
    "jaccard",
    "unmatched_min",
    "unmatched_max",
    "unmatched_idf_min",
    "unmatched_idf_max",
    "one_word_swapped",
    "rare_unmatched",
    "direction_flip",
    "symbols_present",
    "symbols_differ",
    "antonym_swap",
    "class_word_unmatched",
    "one_side_added",
    "length_ratio",
    *(f"guard_{reason}" for reason in REASONS),
    "embedding_l1",
    "embedding_max_difference",
    "embedding_dims_differing",
    "embedding_dims_opposite",
    "embedding_product_spread",
)

Features = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class View:
    """What the verifier reads from one text (computed once per text)."""

    tokens: tuple[str, ...]
    content: frozenset[str]
    order: dict[str, int]  # content word -> position of its first occurrence
    markers: tuple[int, ...]  # positions of direction words
    symbols: Counter[str]
    facts: Facts


@dataclass(frozen=True, slots=True)
class Idf:
    """Inverse document frequency of content words; ``unknown`` for any other word."""

    table: Mapping[str, float]
    unknown: float

    def __call__(self, word: str) -> float:
        return self.table.get(word, self.unknown)


def view_of(text: str) -> View:
    tokens = _tokens(text)
    order: dict[str, int] = {}
    for i, token in enumerate(tokens):
        if token not in _STOP:
            order.setdefault(_stem(token), i)
    return View(
        tokens=tokens,
        content=frozenset(order),
        order=order,
        markers=tuple(i for i, t in enumerate(tokens) if t in _DIRECTION),
        symbols=Counter(_OPERATOR.findall(text)),
        facts=facts_of(text),
    )


def _tokens(text: str) -> tuple[str, ...]:
    lower = text.lower().replace("\u2019", "'")
    return tuple(t.removesuffix("'s") for t in _TOKEN.findall(lower))


def _stem(word: str) -> str:
    # Plural and singular name the same thing ("cups in a quart", "a cup in quarts").
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def pair_features(a: View, b: View, va: Vectors, vb: Vectors, idf: Idf) -> Features:
    """The ``FEATURES`` of the pair, in order."""
    difference, product = np.abs(va - vb), va * vb
    cosine = float(product.sum())
    embedding = [
        float(difference.sum()),
        float(difference.max()),
        float(np.mean(difference > 0.1)),
        float(np.mean(product < 0)),
        float(product.std()),
    ]
    return np.asarray([*_text_features(a, b, cosine, idf), *embedding], dtype=np.float32)


def _text_features(a: View, b: View, cosine: float, idf: Idf) -> list[float]:
    only_a, only_b = a.content - b.content, b.content - a.content
    union = a.content | b.content
    jaccard = len(a.content & b.content) / len(union) if union else 1.0
    share_a, share_b = _idf_share(only_a, a.content, idf), _idf_share(only_b, b.content, idf)
    rare = max(_unknown(only_a, idf), _unknown(only_b, idf))
    antonym = any(_opposed(x, y) for x, y in itertools.product(only_a, only_b))
    lengths = sorted((len(a.tokens), len(b.tokens)))
    return [
        cosine,
        cosine * cosine,
        jaccard,
        min(len(only_a), len(only_b), 4) / 4,
        min(max(len(only_a), len(only_b)), 8) / 8,
        min(share_a, share_b),
        max(share_a, share_b),
        float(len(only_a) == 1 and len(only_b) == 1),
        float(rare),
        float(_direction_flipped(a, b)),
        float(bool(a.symbols or b.symbols)),
        float(a.symbols != b.symbols),
        float(antonym),
        float(any(w in CLASS_OF for w in only_a | only_b)),
        float(bool(only_a) != bool(only_b)),
        lengths[0] / lengths[1] if lengths[1] else 1.0,
        *(float(d) for d in disagreements(a.facts, b.facts)),
    ]


def _idf_share(words: frozenset[str], whole: frozenset[str], idf: Idf) -> float:
    total = sum(map(idf, whole))
    return sum(map(idf, words)) / total if total else 0.0


def _unknown(words: frozenset[str], idf: Idf) -> int:
    return min(sum(1 for w in words if w not in idf.table), 2)


def _opposed(x: str, y: str) -> bool:
    if frozenset((x, y)) in _ANTONYMS:
        return True
    return any(x == p + y or y == p + x for p in _NEGATING_PREFIXES)


_ANTONYMS = frozenset(frozenset(map(_stem, pair)) for pair in PAIRS)


def _direction_flipped(a: View, b: View) -> bool:
    """Some shared content words x, y stand as "x <dir> y" in one text and "y <dir> x" in
    the other, with a direction word between them in both."""
    shared = [w for w in a.content & b.content if w]
    for x, y in itertools.combinations(shared, 2):
        ax, ay, bx, by = a.order[x], a.order[y], b.order[x], b.order[y]
        if (ax < ay) == (bx < by):
            continue
        if _marker_between(a.markers, ax, ay) and _marker_between(b.markers, bx, by):
            return True
    return False


def _marker_between(markers: tuple[int, ...], i: int, j: int) -> bool:
    lo, hi = min(i, j), max(i, j)
    return any(lo < m < hi for m in markers)


def idf_of(texts: list[str], min_count: int = 3) -> Idf:
    """Smoothed IDF of the content words of ``texts`` seen at least ``min_count`` times;
    any other word gets the IDF of a word seen ``min_count`` times (as rare as known)."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(content_words(text))
    n = len(texts)
    table = {w: math.log((1 + n) / (1 + c)) + 1 for w, c in counts.items() if c >= min_count}
    return Idf(table, math.log((1 + n) / (1 + min_count)) + 1)


def content_words(text: str) -> frozenset[str]:
    """The content words of ``text`` as the features see them (stemmed, no stop words)."""
    return frozenset(_stem(t) for t in _tokens(text) if t not in _STOP)
