"""The summary fact check: which facts are extracted, and when a summary keeps them."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.rewrite.summary_check import check_summary, extract_facts


@pytest.mark.parametrize(
    ("text", "facts"),
    [
        ("We need 3 boxes.", {"3"}),
        ("It costs $1,250.50 in total.", {"1250.50"}),
        ("Pi is 3.14, e is 2.718.", {"3.14", "2.718"}),
        ("Ship on 2026-11-21 at 10:30.", {"2026-11-21", "10:30"}),
        ("Due 2026-11-21T10:00:00Z sharp", {"2026-11-21T10:00:00Z"}),
        ("Signed 21/11/2026 and Nov 21, 2026.", {"21/11/2026", "Nov 21, 2026"}),
        ("Order ORD-1234 for user_id u_42", {"ORD-1234", "user_id", "u_42"}),
        ("Call getUser in v2.1", {"getUser", "v2.1"}),
        ("Alice Smith works at Acme Corp in New York.", {"Alice Smith", "Acme Corp", "New York"}),
        ("The Acme Corp team agreed.", {"Acme Corp"}),
        ("Then Alice Smith called.", {"Alice Smith"}),
        ("Hello there. Thanks a lot!", set()),
        ("Alice called. Bob answered.", set()),  # single capitalised words are not required
        ("", set()),
    ],
)
def test_extracted_facts(text: str, facts: set[str]) -> None:
    assert extract_facts(text) == facts


REPLACED = (
    "user: Alice Smith wants 3 units of SKU-889 for $1,250.00, delivered to New York by "
    "2026-11-21.\nassistant: Noted, order ORD-77 is open."
)


@pytest.mark.parametrize(
    ("summary", "missing"),
    [
        (
            "Alice Smith ordered 3 x SKU-889 ($1250.00) for New York, due 2026-11-21; ORD-77.",
            (),
        ),
        (
            "alice smith: 3 sku-889, 1,250.00, new york, 2026-11-21, ord-77",  # case is free
            (),
        ),
        (
            "Alice Smith ordered some units of SKU-889 ($1250.00) for New York by 2026-11-21, "
            "ORD-77.",
            ("3",),
        ),
        ("Alice Smith: 33 units of SKU-889, $1250.00, New York, 2026-11-21, ORD-77.", ("3",)),
        ("Alice Smith: 3 units of SKU-8890, $1250.00, New York, 2026-11-21, ORD-77.", ("SKU-889",)),
        (
            "A customer ordered 3 units of SKU-889 for $1250.00 to New York by 2026-11-21 "
            "(ORD-77).",
            ("Alice Smith",),
        ),
        ("Alice Smith: 3 x SKU-889, $1250.00, New York, late November, ORD-77.", ("2026-11-21",)),
        ("", ("1250.00", "2026-11-21", "3", "Alice Smith", "New York", "ORD-77", "SKU-889")),
    ],
)
def test_summary_must_keep_every_fact(summary: str, missing: tuple[str, ...]) -> None:
    check = check_summary(REPLACED, summary)
    assert check.missing == tuple(sorted(missing))
    assert check.ok == (not missing)


def test_text_without_facts_accepts_any_summary() -> None:
    assert check_summary("user: hi\nassistant: hello, how can I help?", "Greetings.").ok


PIECES = [
    "Alice Smith",
    "Acme Corp",
    "the",
    "The",
    "order",
    "ORD-1234",
    "user_id",
    "getUser",
    "42",
    "3.14",
    "1,250",
    "2026-11-21",
    "10:30",
    "Nov 21, 2026",
    "v2.1",
    "é",
    ",",
    ".",
    "-",
    "$",
]
TEXTS = st.lists(st.sampled_from(PIECES), max_size=20).map(" ".join)
WHITESPACE = st.sampled_from([" ", "\n", "  ", "\t", " \n "])


@settings(max_examples=300, deadline=None)
@given(TEXTS, WHITESPACE)
def test_the_text_itself_always_passes_whatever_its_whitespace(text: str, space: str) -> None:
    assert check_summary(text, text).ok
    assert check_summary(text, text.replace(" ", space)).ok


@settings(max_examples=300, deadline=None)
@given(TEXTS, TEXTS)
def test_adding_to_a_passing_summary_keeps_it_passing(text: str, more: str) -> None:
    assert check_summary(text, text + "\n" + more).ok
    assert check_summary(text, more + "\n" + text).ok


@settings(max_examples=300, deadline=None)
@given(TEXTS)
def test_every_fact_is_required(text: str) -> None:
    for fact in extract_facts(text):
        assert fact in check_summary(text, "").missing
