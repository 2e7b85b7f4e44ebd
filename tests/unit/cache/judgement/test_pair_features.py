"""The verifier's pair features, one table row per phenomenon."""

from __future__ import annotations

import numpy as np
import pytest

from gateway.cache.judgement.pair_features import (
    FEATURES,
    Idf,
    content_words,
    idf_of,
    pair_features,
    view_of,
)

IDF = Idf({"convert": 2.0, "capital": 2.0}, unknown=6.0)


V = np.array([0.6, 0.8, 0.0], np.float32)


def _features(a: str, b: str) -> dict[str, float]:
    values = pair_features(view_of(a), view_of(b), V, V, IDF)
    return dict(zip(FEATURES, values.tolist(), strict=True))


@pytest.mark.parametrize(
    ("a", "b", "name", "value"),
    [
        # direction: the same words, swapped around "to" / "in" / "from"
        ("How do I convert fahrenheit to celsius?", "How do I convert celsius to fahrenheit?",
         "direction_flip", 1.0),
        ("How many cups are in a quart?", "How many quarts are in a cup?", "direction_flip", 1.0),
        ("Flights from Oslo to Rome", "Flights from Rome to Oslo", "direction_flip", 1.0),
        ("How do I reverse a string in python?", "How do I reverse a python string?",
         "direction_flip", 0.0),
        ("How do I convert fahrenheit to celsius?", "Fahrenheit to celsius: how?",
         "direction_flip", 0.0),
        # operators and symbols
        ("SELECT * FROM t WHERE age > 30", "SELECT * FROM t WHERE age < 30", "symbols_differ", 1.0),
        ("What does x += 1 do?", "What does x -= 1 do?", "symbols_differ", 1.0),
        ("Is a && b lazy?", "Is a || b lazy?", "symbols_differ", 1.0),
        ("WHERE age > 30", "WHERE age > 30 please", "symbols_differ", 0.0),
        ("WHERE age > 30", "WHERE age > 30 please", "symbols_present", 1.0),
        ("How do I set up two-factor auth?", "How can I set up two-factor auth?",
         "symbols_present", 0.0),
        # one content word swapped, case does not matter
        ("what is the capital of austria", "What is the capital of Australia?",
         "one_word_swapped", 1.0),
        ("what is the capital of austria", "what's austria's capital", "one_word_swapped", 0.0),
        ("who directed the godfather", "who directed goodfellas", "rare_unmatched", 1.0),
        # word classes: a place, person or variant word in one text only
        ("What is the population of New York city?", "What is the population of New York state?",
         "class_word_unmatched", 1.0),
        ("What dose of paracetamol for a baby?", "What dose of paracetamol for a toddler?",
         "class_word_unmatched", 1.0),
        ("How much is the iPhone 15?", "How much is the iPhone 15 Pro?",
         "class_word_unmatched", 1.0),
        ("How much is the iPhone 15?", "What does the iPhone 15 cost?",
         "class_word_unmatched", 0.0),
        # words added on one side only
        ("How much is the iPhone 15?", "How much is the iPhone 15 Pro?", "one_side_added", 1.0),
        ("What is the population of New York city?", "What is the population of New York state?",
         "one_side_added", 0.0),
        ("How do I reset my password?", "How do I reset my password?", "one_side_added", 0.0),
        # antonyms: listed, or a negating prefix
        ("What makes a strong password?", "What makes a weak password?", "antonym_swap", 1.0),
        ("Is this food healthy?", "Is this food unhealthy?", "antonym_swap", 1.0),
        ("What are the advantages of X?", "What are the disadvantages of X?", "antonym_swap", 1.0),
        ("What makes a strong password?", "What makes a robust password?", "antonym_swap", 0.0),
        # the guard's facts
        ("Is 8GB enough?", "Is 16GB enough?", "guard_number", 1.0),
        ("Does it ship to Spain?", "Doesn't it ship to Spain?", "guard_negation", 1.0),
        ("Visa for Canada?", "Visa for Mexico?", "guard_entity", 1.0),
        ("Visa for Canada?", "Canada visa?", "guard_entity", 0.0),
        # alignment
        ("reset my password", "my password reset", "jaccard", 1.0),
        ("reset my password", "reset my password", "unmatched_max", 0.0),
    ],
)  # fmt: skip
def test_text_features(a: str, b: str, name: str, value: float) -> None:
    assert _features(a, b)[name] == pytest.approx(value)
    assert _features(b, a)[name] == pytest.approx(value)  # a pair's features are symmetric


def test_idf_weighted_share_of_unmatched_words() -> None:
    got = _features("convert capital", "convert zebra")
    # "capital" (2.0 of 4.0) is unmatched on one side, "zebra" (unknown: 6.0 of 8.0) on the other
    assert got["unmatched_idf_min"] == pytest.approx(0.5)
    assert got["unmatched_idf_max"] == pytest.approx(0.75)


def test_embedding_features() -> None:
    va = np.array([0.6, 0.8, 0.0], np.float32)
    vb = np.array([0.0, 0.8, -0.6], np.float32)
    got = dict(zip(FEATURES, pair_features(view_of("a"), view_of("a"), va, vb, IDF), strict=True))
    assert got["cosine"] == pytest.approx(0.64)
    assert got["embedding_l1"] == pytest.approx(1.2)
    assert got["embedding_max_difference"] == pytest.approx(0.6)
    assert got["embedding_dims_differing"] == pytest.approx(2 / 3)
    assert got["embedding_dims_opposite"] == 0.0  # 0.6 * 0.0 and 0.0 * -0.6 are not negative
    assert got["embedding_product_spread"] == pytest.approx(np.std([0.0, 0.64, 0.0]), abs=1e-6)


def test_idf_of_counts_documents_and_stems_plurals() -> None:
    idf = idf_of(["cups in a quart", "a cup of tea", "tea time", "cup"], min_count=2)
    assert set(idf.table) == {"cup", "tea"}
    assert idf("cup") < idf("tea") == idf("quart") == idf.unknown  # unseen: as rare as known
    assert content_words("How many Cups are in a quart?") == {"cup", "quart"}
