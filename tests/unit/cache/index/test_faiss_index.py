from __future__ import annotations

import numpy as np

from gateway.cache.index.faiss_index import IndexSettings, ScopedIndex


def _unit(rng: np.random.Generator, n: int, dim: int = 16) -> np.ndarray:
    v = rng.standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_search_is_per_scope_and_best_first() -> None:
    rng = np.random.default_rng(0)
    vecs = _unit(rng, 3)
    index = ScopedIndex(16)
    index.add("a", 1, vecs[0])
    index.add("a", 2, vecs[1])
    index.add("b", 3, vecs[2])
    found = index.search("a", vecs[0], k=4)
    assert found[0][0] == 1
    assert abs(found[0][1] - 1.0) < 1e-5
    assert {i for i, _ in found} == {1, 2}
    assert index.search("c", vecs[0]) == []


def test_remove_and_replace() -> None:
    rng = np.random.default_rng(1)
    vecs = _unit(rng, 2)
    index = ScopedIndex(16)
    index.add("a", 1, vecs[0])
    index.remove(1)
    assert index.search("a", vecs[0]) == []
    assert len(index) == 0
    index.add("a", 2, vecs[0])
    index.add("a", 2, vecs[1])  # same id again: replaced
    assert index.search("a", vecs[1], k=1)[0][0] == 2
    assert len(index) == 1


def test_large_scopes_switch_to_hnsw_and_still_find_and_forget() -> None:
    rng = np.random.default_rng(2)
    vecs = _unit(rng, 300)
    index = ScopedIndex(16, IndexSettings(hnsw_from=100))
    for i, v in enumerate(vecs):
        index.add("s", i, v)
    hits = sum(index.search("s", v, k=1)[0][0] == i for i, v in enumerate(vecs))
    assert hits >= 295  # approximate, but nearly always right on its own vectors
    for i in range(0, 100):
        index.remove(i)  # tombstones, then a rebuild
    assert all(i >= 100 for i, _ in index.search("s", vecs[5], k=8))
    assert len(index) == 200
