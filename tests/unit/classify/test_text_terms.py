"""The terms the text model weighs, and the prompt format it tells apart."""

from __future__ import annotations

from itertools import pairwise

import pytest

from gateway.classify.features import FeatureConfig
from gateway.classify.prompt_format import prompt_format
from gateway.classify.text_terms import term_key, terms, window, window_terms, words


@pytest.mark.parametrize(
    ("ask", "expected"),
    [
        ("Hello!", {b"hello"}),
        ("Prove it, now.", {b"prove", b"it", b"now", b"prove it", b"it now"}),
        ("x=2^3", {b"x", b"2", b"3", b"x 2", b"2 3"}),
        ("", set()),
        ("Café crème", {"café".encode(), "crème".encode(), "café crème".encode()}),
    ],
)
def test_terms_are_words_and_adjacent_pairs(ask: str, expected: set[bytes]) -> None:
    assert terms(ask) == expected


def test_only_the_head_and_tail_of_a_long_ask_are_read() -> None:
    config = FeatureConfig(scan_head_chars=10, scan_tail_chars=5)
    ask = "alpha beta " + "middle " * 100 + "omega"
    assert window(ask, config) == "alpha beta\nomega"
    assert b"middle" not in terms(ask, config)
    assert b"beta omega" in terms(ask, config)  # the cut joins head and tail


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("What is 2+2?\nA. 3\nB. 4\nC. 5\nD. 6\nAnswer:", "choice"),
        ("Pick one:\n(A) red\n(B) blue", "choice"),
        ("Pick one:\nA) red\nB) blue", "choice"),
        ("Items:\na) red\nb) blue", "free"),  # a lower-case list enumerates
        ("B. second\nA. first", "free"),  # B before any A
        ("Plan A. Then B. Done.", "free"),  # not at line starts
        ("How many eggs does Janet sell?", "free"),
    ],
)
def test_prompt_format(text: str, expected: str) -> None:
    assert prompt_format(text) == expected


@pytest.mark.parametrize(
    "ask",
    ["Prove it, now.", "a b a b", "Café crème brûlée", "x=2^3\n\ny = 4", "", "one"],
)
def test_lookup_keys_are_the_terms_in_another_form(ask: str) -> None:
    text = window(ask)
    found = words(text)
    # What the text model looks up: the words and each word with the next, as a tuple.
    assert {term_key(t) for t in window_terms(text)} == {*found, *pairwise(found)}
