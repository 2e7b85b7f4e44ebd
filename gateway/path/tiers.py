"""Tier rules for ``route: auto`` models: the first rule whose conditions all hold wins.

Conditions (each optional, all given ones must hold): the request's length class, bounds on
its difficulty score, its priority, the public model it asked for, and its tenant. No rule matching
means the policy's default pool.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gateway.policy.schema import Rule, RuleWhen


@dataclass(frozen=True, slots=True)
class Facts:
    length: str
    difficulty: float
    priority: str
    model: str
    tenant: str | None = None


def matches(when: RuleWhen, facts: Facts) -> bool:
    if when.length is not None and facts.length not in when.length:
        return False
    if when.difficulty_at_least is not None and facts.difficulty < when.difficulty_at_least:
        return False
    if when.difficulty_below is not None and facts.difficulty >= when.difficulty_below:
        return False
    if when.priority is not None and facts.priority not in when.priority:
        return False
    if when.tenant is not None and facts.tenant not in when.tenant:
        return False
    return when.model is None or facts.model in when.model


def first_match(rules: Sequence[Rule], facts: Facts) -> Rule | None:
    return next((rule for rule in rules if matches(rule.when, facts)), None)
