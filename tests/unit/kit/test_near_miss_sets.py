"""The written near-miss sets: the evaluation set is large enough and shares nothing with
the pairs the verifier is fitted on."""

from __future__ import annotations

from collections import Counter

from loadtests.kit.cache_pairs import NEAR_MISS_EVAL, NEAR_MISS_TRAIN, load_written

KINDS = {"code", "sql", "conversion", "entity", "antonym", "dosage", "audience"}


def test_the_evaluation_set_covers_the_kinds_with_paraphrases_beside_them() -> None:
    pairs = load_written(NEAR_MISS_EVAL)
    assert len(pairs) >= 150
    near_misses = Counter(p.kind for p in pairs if not p.label)
    paraphrases = Counter(p.kind for p in pairs if p.label)
    for kind in KINDS:
        assert near_misses[kind] >= 10, kind
        assert paraphrases[kind] >= 5, kind
    assert {p.label for p in pairs} == {0, 1}


def test_no_text_of_the_evaluation_set_is_fitted_on() -> None:
    evaluated = {t for p in load_written(NEAR_MISS_EVAL) for t in (p.a, p.b)}
    fitted = {t for p in load_written(NEAR_MISS_TRAIN) for t in (p.a, p.b)}
    assert not {t.lower() for t in evaluated} & {t.lower() for t in fitted}
