"""Tier rule conditions, by table."""

from __future__ import annotations

import pytest

from gateway.path.plan import Facts, first_match, matches
from gateway.schema import Rule, RuleWhen

FACTS = Facts(length="short", difficulty=0.7, priority="standard", model="auto")


@pytest.mark.parametrize(
    ("when", "expected"),
    [
        (RuleWhen(), True),
        (RuleWhen(length=["short"]), True),
        (RuleWhen(length=["medium", "long"]), False),
        (RuleWhen(difficulty_at_least=0.7), True),
        (RuleWhen(difficulty_at_least=0.71), False),
        (RuleWhen(difficulty_below=0.7), False),
        (RuleWhen(difficulty_below=0.8), True),
        (RuleWhen(priority=["critical"]), False),
        (RuleWhen(priority=["standard", "critical"]), True),
        (RuleWhen(model=["auto"]), True),
        (RuleWhen(model=["auto-cheap"]), False),
        (RuleWhen(length=["short"], priority=["critical"]), False),
    ],
)
def test_matches(when: RuleWhen, expected: bool) -> None:
    assert matches(when, FACTS) is expected


def test_first_match_wins() -> None:
    rules = [
        Rule(name="a", when=RuleWhen(priority=["critical"]), pool="x"),
        Rule(name="b", when=RuleWhen(difficulty_at_least=0.5), pool="y"),
        Rule(name="c", pool="z"),
    ]
    chosen = first_match(rules, FACTS)
    assert chosen is not None
    assert chosen.name == "b"
    assert first_match(rules[:1], FACTS) is None
