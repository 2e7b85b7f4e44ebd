"""The fresh near-miss set of issue 35: large enough, every kind asked for with paraphrases
beside it, and no text of it among the pairs anything is fitted on."""

from __future__ import annotations

from collections import Counter

from loadtests.kit.cache_pairs import (
    CROSS_TRAIN,
    FRESH_EVAL,
    NEAR_MISS_EVAL,
    NEAR_MISS_TRAIN,
    load_written,
    unseen,
)

KINDS = {"entity", "number", "conversion", "order", "drug", "code", "sql"}


def test_the_fresh_set_covers_the_kinds_with_paraphrases_beside_them() -> None:
    pairs = load_written(FRESH_EVAL)
    assert len(pairs) >= 150
    near_misses = Counter(p.kind for p in pairs if not p.label)
    paraphrases = Counter(p.kind for p in pairs if p.label)
    for kind in KINDS:
        assert near_misses[kind] >= 10, kind
        assert paraphrases[kind] >= 5, kind
    assert len({(p.a, p.b) for p in pairs}) == len(pairs)


def test_no_text_of_the_fresh_set_is_fitted_on_or_in_the_older_set() -> None:
    fresh = {t.lower() for p in load_written(FRESH_EVAL) for t in (p.a, p.b)}
    for other in (NEAR_MISS_TRAIN, CROSS_TRAIN, NEAR_MISS_EVAL):
        texts = {t.lower() for p in load_written(other) for t in (p.a, p.b)}
        assert not fresh & texts, other.name


def test_the_older_set_is_read_without_the_pairs_sharing_a_text_with_the_training_pairs() -> None:
    # Four texts of the cross-encoder's training pairs also appear in the issue-21 set
    # (found after the fit): the benchmark leaves those pairs out, for every rule.
    older, trained = load_written(NEAR_MISS_EVAL), load_written(CROSS_TRAIN)
    kept = unseen(older, trained)
    seen = {t.lower() for p in trained for t in (p.a, p.b)}
    assert 0 < len(older) - len(kept) <= 8
    assert not {t.lower() for p in kept for t in (p.a, p.b)} & seen
