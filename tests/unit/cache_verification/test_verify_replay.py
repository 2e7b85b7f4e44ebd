"""The verification benchmark's replay (``loadtests/cache_verification``): injected
streams and draws, no data, no model."""

from __future__ import annotations

import pytest

from gateway.schema import CacheVerify
from loadtests.cache_verification.cli import Window, replay, zipf_stream
from loadtests.kit.cache_pairs import Pair

WRONG = Pair("How do I sort a list ascending?", "How do I sort a list descending?", 0)
RIGHT = Pair("How do I sort a list ascending?", "How can I sort a list ascending?", 1)
FAR = Pair("How do I sort a list ascending?", "Sorting a list, ascending order?", 1)


@pytest.mark.parametrize(
    ("sample", "hits", "wrong", "misses", "exact", "verifications"),
    [
        (0.0, 4, 4, 0, 0, 0),  # a wrong hit stores nothing: it repeats on every ask
        (1.0, 1, 1, 1, 2, 1),  # verified once: a miss (its own answer stored), then exact
        (0.5, 2, 2, 1, 1, 1),  # draws 0.9 (not verified), 0.1 (verified)
    ],
)
def test_a_wrong_hit_repeats_until_verified(
    sample: float, hits: int, wrong: int, misses: int, exact: int, verifications: int
) -> None:
    draws = [0.9, 0.1, 0.9, 0.9]
    [w] = replay([WRONG], [True], [0.93], [0, 0, 0, 0], draws, CacheVerify(sample=sample), 1)
    assert (w.hits, w.hits - w.right_hits, w.misses, w.exact) == (hits, wrong, misses, exact)
    assert w.verifications == verifications


def test_tightening_is_per_entry_and_spares_closer_questions() -> None:
    """A disagreement at cosine 0.93 raises the entry's least cosine to 0.94: a duplicate at
    0.97 keeps hitting, one at 0.90 now misses (recall spent for precision)."""
    pairs, cosines = [WRONG, RIGHT, FAR], [0.93, 0.97, 0.90]
    windows = replay(
        pairs, [True] * 3, cosines, [0, 1, 2, 1, 2], [0.0] * 5, CacheVerify(sample=1.0), 5
    )
    assert [(w.hits, w.right_hits, w.misses) for w in windows] == [
        (1, 0, 0),  # WRONG: a wrong hit, verified: disagree
        (1, 1, 0),  # RIGHT at 0.97: still a hit (agrees)
        (0, 0, 1),  # FAR at 0.90: under the raised threshold
        (1, 1, 0),
        (0, 0, 0),  # FAR again: its own answer, an exact hit
    ]
    assert windows[4].exact == 1


def test_windows_add_up_and_rates() -> None:
    total, one = Window(), Window(asks=4, hits=2, right_hits=1, duplicate_asks=4, misses=1)
    total.add(one)
    total.add(Window(asks=1, verifications=1))
    assert (total.asks, total.backend_calls) == (5, 2)
    assert (total.precision, total.recall) == (0.5, 0.25)
    assert (Window().precision, Window().recall) == (None, None)


def test_zipf_stream_is_seeded_and_skewed() -> None:
    first, again = zipf_stream(100, 5000, 1.0, seed=3), zipf_stream(100, 5000, 1.0, seed=3)
    assert first == again
    counts = sorted((first.count(i) for i in set(first)), reverse=True)
    assert counts[0] > 10 * counts[len(counts) // 2]  # the most popular pair dominates
