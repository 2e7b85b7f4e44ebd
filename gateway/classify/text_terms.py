"""The terms of a request's text that the learned difficulty model weighs: its words and
pairs of adjacent words.

Algorithm: keep the window of the ask that the cheap features read (its first
``scan_head_chars`` and last ``scan_tail_chars`` characters, ``features.py``), lower-case it,
turn punctuation into spaces (the same table as the features), split on whitespace into words
(UTF-8 bytes), and add each pair of adjacent words joined by one space. The terms are the set
of those words and pairs: presence counts, not frequency. Digits are kept as they are.

Cost is bounded by the window (2,000 characters by default, about 350 words): one C pass
each for lower-casing, translating and splitting. The request path does not build the terms:
the text model looks up the features' word split (``features.scan``) directly, a word pair as
the tuple of its words (``term_key``: no join per pair).
"""

from __future__ import annotations

from itertools import pairwise

from gateway.classify.features import FeatureConfig

_PUNCT = b"()[]{}<>.,;:=+-*/\\\"'`_#!?&|%$@^~"
_TO_SPACE = bytes.maketrans(_PUNCT, b" " * len(_PUNCT))
_DEFAULT = FeatureConfig()


def window(ask: str, config: FeatureConfig = _DEFAULT) -> str:
    """The part of the ask that is read: its head and tail (the middle of a pasted document
    adds cost, not signal)."""
    head, tail = config.scan_head_chars, config.scan_tail_chars
    if len(ask) <= head + tail:
        return ask
    return ask[:head] + "\n" + ask[len(ask) - tail :]


def same_window(config: FeatureConfig) -> bool:
    """Whether features read with ``config`` scan the window that the text model reads (the
    default one), so that their word split (``scanning.Scan``) is the model's ``words``."""
    return (config.scan_head_chars, config.scan_tail_chars) == (
        _DEFAULT.scan_head_chars,
        _DEFAULT.scan_tail_chars,
    )


def words(text: str) -> list[bytes]:
    """The words of a window (``window``), in order."""
    raw = text.lower().encode("utf-8", "surrogatepass")
    return raw.translate(_TO_SPACE).split()


def window_terms(text: str) -> frozenset[bytes]:
    """The words and adjacent word pairs of a window (``window``)."""
    found = words(text)
    pairs = map(b" ".join, pairwise(found))
    return frozenset(found).union(pairs)


def term_key(term: bytes) -> bytes | tuple[bytes, bytes]:
    """The lookup key of a term of ``window_terms``."""
    first, space, second = term.partition(b" ")
    return (first, second) if space else term


def terms(ask: str, config: FeatureConfig = _DEFAULT) -> frozenset[bytes]:
    """The words and adjacent word pairs of the ask's window."""
    return window_terms(window(ask, config))
