"""The window's one split (``classify/scanning.py``) against splitting the window and its
instruction each on their own."""

from __future__ import annotations

import pytest

from gateway.classify import vocabulary as v
from gateway.classify.scanning import instruction_spans, split_window, text_of


def _instruction(text: str, limit: int) -> str:
    """The instruction as the features defined it before the shared split."""
    if "```" in text:
        text = "\n".join(text.split("```")[0::2])
    if "\n\n" not in text:
        return text
    paragraphs = text.split("\n\n")
    keep = [part for part in paragraphs if len(part) <= limit]
    return "\n".join(keep) if keep else paragraphs[0][:limit]


LONG = "Quoted report text that runs on and on. " * 12  # over 400 characters

CASES = [
    ("plain", "Why must the cache expire first? Explain step by step.", 400),
    ("empty", "", 400),
    ("long paragraph dropped", f"Summarise this, then why.\n\n{LONG}\n\nKeep it brief.", 400),
    ("code dropped", "Review this:\n```python\ndef f(): return 1\n```\nWhy does it fail?", 400),
    ("fence never closed", f"{LONG}\n```\nthen must x = 1\n", 400),
    ("paragraph across a fence", "first part ```code``` then rest\n\nwhy", 400),
    ("break before a fence", "must a\n\n```x```\n\nb then", 400),
    ("newline at the join", "a\n```c```\nb\n\nwhy", 400),
    ("blank lines at the join", "a\n\n```c```\n\nthen", 3),
    ("triple newline", "why\n\n\nmust\n\n\n\nfirst", 400),
    ("empty fences", "``````why\n\n``````", 400),
    ("every paragraph long", f"{LONG}\n\n{LONG}", 400),
    ("short limit", "ab cd\n\nefgh ij\n\nk", 4),
    ("not ascii", f"Pourquoi é?\n\n{LONG}\n\nthen 𝛑 must", 400),
    ("punctuation edges", "x.\n\n(why)\n\n```y```-then", 2),
    ("tabs and returns", "why\r\n\r\nmust\t\x0bfirst\n\n\x0cthen", 400),
]


@pytest.mark.parametrize(("name", "text", "limit"), CASES, ids=[c[0] for c in CASES])
def test_one_split_gives_what_two_splits_give(name: str, text: str, limit: int) -> None:
    scanned = split_window(text, limit)
    said = text_of(_instruction(text, limit))
    assert scanned.whole == text_of(text)
    assert scanned.instruction.text == said.text
    assert scanned.instruction.lower == said.lower
    assert scanned.instruction.n_words == said.n_words
    assert scanned.instruction.cues == said.words & v.INSTRUCTION_CUES


@pytest.mark.parametrize(
    ("text", "limit", "spans"),
    [
        ("a\n\nb", 400, [(0, 4)]),  # kept paragraphs one break apart: one span
        ("a\n\nlonger\n\nb", 2, [(0, 1), (11, 12)]),
        ("a```code```b", 400, [(0, 1), (11, 12)]),
        ("a```code", 400, [(0, 1)]),
        ("long\n\nlonger", 2, None),  # the instruction is a cut of the first paragraph
    ],
)
def test_spans(text: str, limit: int, spans: list[tuple[int, int]] | None) -> None:
    assert instruction_spans(text, limit)[1] == spans


@pytest.mark.parametrize(
    "words",
    [
        v.REASONING,
        v.SEQUENCE_WORDS,
        v.CONSTRAINT_WORDS,
        v.SIMPLE_WORDS,
        frozenset(gate for gate, _ in v.CONSTRAINT_PHRASES + v.SIMPLE_PHRASES),
    ],
)
def test_the_instruction_keeps_every_word_its_features_read(words: frozenset[bytes]) -> None:
    assert words <= v.INSTRUCTION_CUES
