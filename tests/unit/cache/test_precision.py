"""Pins the semantic cache's precision and recall on the labelled pairs (real model).

The old rule at its old default threshold (0.92), with the guard: precision at least 0.98 (a
wrong answer is worse than a slow one) and recall at least 0.85 on these pairs. The set and
its figures: ``python -m loadtests.cache_precision``.
"""

from __future__ import annotations

import pytest

from gateway.embedding import SentenceEncoder
from loadtests.cache_precision.scoring import OLD_THRESHOLD, Scored, labelled, measure, score


@pytest.fixture(scope="module")
def scored() -> list[Scored]:
    return score(SentenceEncoder())


def test_the_set_is_large_and_varied() -> None:
    rows = labelled()
    assert len(rows) >= 400
    assert len({r[0] for r in rows}) >= 8
    assert {r[1] for r in rows} >= {"paraphrase", "negation", "number", "date", "entity", "unit"}


def test_precision_and_recall_of_the_old_rule(scored: list[Scored]) -> None:
    result = measure(scored, OLD_THRESHOLD)
    assert result.precision >= 0.98, result
    assert result.recall >= 0.85, result


def test_the_guard_is_what_keeps_precision_up(scored: list[Scored]) -> None:
    threshold = OLD_THRESHOLD
    assert measure(scored, threshold, guard=False).precision < 0.8
    for kind in ("negation", "number", "date", "unit", "entity"):
        kind_rows = [s for s in scored if s.kind == kind]
        assert not any(s.hit(threshold) for s in kind_rows), kind
