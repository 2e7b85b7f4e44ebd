"""Whitespace normalisation outside fenced code."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.rewrite.whitespace import code_spans, normalize

CASES: dict[str, tuple[str, str]] = {
    "clean": ("a\nb\n\nc", "a\nb\n\nc"),
    "crlf": ("a\r\nb\r\n", "a\nb\n"),
    "trailing": ("a  \nb\t\nc ", "a\nb\nc"),
    "blank runs": ("a\n\n\n\nb\n \n\t\n \nc", "a\n\nb\n\nc"),
    "lone cr kept": ("a\rb", "a\rb"),
    "leading spaces kept": ("  a\n    b", "  a\n    b"),
    "code kept": (
        "x  \n```py\ndef f():  \n\n\n\n  pass\r\n```\ny  ",
        "x\n```py\ndef f():  \n\n\n\n  pass\r\n```\ny",
    ),
    "tilde fence": ("~~~\na  \n~~~\nb  ", "~~~\na  \n~~~\nb"),
    "unclosed fence": ("a  \n```\nb  \n\n\n", "a\n```\nb  \n\n\n"),
    "longer closing": ("````\na  \n```\nb  \n`````\nc  ", "````\na  \n```\nb  \n`````\nc"),
    "indented fence": ("   ```\na  \n   ```\nb  ", "   ```\na  \n   ```\nb"),
    "too indented": ("    ```\na  \n", "    ```\na\n"),
    "inline backticks": ("``` x ``` \na  ", "``` x ```\na"),
    "fence mid-line": ("see ``` \na  ", "see ```\na"),
}


@pytest.mark.parametrize(("text", "expected"), CASES.values(), ids=list(CASES))
def test_normalize(text: str, expected: str) -> None:
    assert normalize(text) == expected
    assert normalize(expected) == expected


def test_unchanged_text_is_the_same_object() -> None:
    text = "no work here\n\nat all"
    assert normalize(text) is text


def test_keep_tail_leaves_the_continuation_point() -> None:
    assert normalize("a  \n\n\n\nb:  \n\n\n", keep_tail=True) == "a\n\nb:  \n\n\n"
    assert normalize("   ", keep_tail=True) == "   "


def test_code_spans() -> None:
    text = "a\n```\ncode\n```\nb\n~~~~\nmore\n"
    assert [text[lo:hi] for lo, hi in code_spans(text)] == ["```\ncode\n```", "~~~~\nmore\n"]
    assert code_spans("no fences") == []


ALPHABET = st.sampled_from(["a", "b", " ", "\t", "\n", "\r\n", "```", "~~~", "```py", "x y"])


@settings(max_examples=300, deadline=None)
@given(st.lists(ALPHABET, max_size=40).map("".join))
def test_properties(text: str) -> None:
    once = normalize(text)
    assert normalize(once) == once  # a fixed point
    assert once.split() == text.split()  # only whitespace changes
    blocks = [text[lo:hi] for lo, hi in code_spans(text)]
    assert [once[lo:hi] for lo, hi in code_spans(once)] == blocks  # code untouched
