from __future__ import annotations

import pytest

from gateway.cache.judgement.guard import refusal


@pytest.mark.parametrize(
    ("a", "b", "reason"),
    [
        ("How do I turn on the lights?", "How do I turn off the lights?", "polarity"),
        ("How do I enable dark mode?", "How do I turn off dark mode?", "polarity"),
        ("Does it ship to Spain?", "Doesn't it ship to Spain?", "negation"),
        ("Is 8GB of RAM enough?", "Is 16GB of RAM enough?", "number"),
        ("Give me two examples.", "Give me three examples.", "number"),
        ("Is the shop open on Friday?", "Is the shop open on Monday?", "date"),
        ("Lights on at 7am", "Lights on at 7pm", "number"),
        ("Maintenance this weekend?", "Maintenance next weekend?", "date"),
        ("How far is 10 km in miles?", "How far is 10 miles in km?", "unit"),
        ("How many grams in a cup?", "How many ounces in a cup?", "unit"),
        ("Visa for Canada?", "Visa for Mexico?", "entity"),
        ("Reverse a list in Python", "Reverse a list in Java", "entity"),
    ],
)
def test_refuses_matches_that_differ_in_meaning(a: str, b: str, reason: str) -> None:
    assert refusal(a, b) == reason
    assert refusal(b, a) == reason


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("How do I reset my password?", "How can I reset my password?"),
        ("What is the capital of France?", "France's capital is what?"),
        ("Why doesn't my laptop start?", "Why does my laptop not start?"),
        ("Which one is faster?", "Which is faster?"),
        ("How do I log in on my phone?", "How do I sign into my phone?"),
        ("Explain KV caches", "Can you explain KV caches?"),
        ("What\u2019s the return policy?", "What's the return policy?"),
    ],
)
def test_lets_paraphrases_through(a: str, b: str) -> None:
    assert refusal(a, b) is None
