"""Nearest-neighbour search over cached questions, one FAISS index per scope.

Algorithm: vectors are unit length, so the inner product is the cosine similarity. A scope
(public model, tenant, context hash, sampling bucket; see ``cache/store/cache_keys.py``) starts
with an exact ``IndexFlatIP``; when it grows past ``hnsw_from`` entries (default 4096) it is
rebuilt as an ``IndexHNSWFlat`` (inner product, ``hnsw_m`` 32 links, ``ef_search`` 64,
``ef_construction`` 80), whose search cost grows with log(n) rather than n. HNSW cannot delete,
so removed ids are tombstoned and filtered from results; a scope is rebuilt from its live
vectors when tombstones reach a quarter of it. Search asks for ``k`` (default 4) neighbours so
that the guard can look past a best match it refuses. Approximate search can only miss a
neighbour (a lost hit), never invent one: the threshold is checked on the true inner product.
Not thread-safe: the cache calls it from one worker thread at a time. FAISS (the
``semantic`` extra) is imported when the first scope is made, so a gateway without the
semantic cache runs without it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from gateway.embedding.encoder import Vectors

if TYPE_CHECKING:
    import faiss


@dataclass(frozen=True, slots=True)
class IndexSettings:
    hnsw_from: int = 4096
    hnsw_m: int = 32
    ef_search: int = 64
    ef_construction: int = 80


@dataclass(slots=True)
class _Scope:
    index: faiss.Index
    vectors: dict[int, Vectors] = field(default_factory=dict)  # live entries, for rebuilds
    dead: int = 0
    hnsw: bool = False


class ScopedIndex:
    """Maps (scope, id) to vectors and answers "nearest live ids above a score"."""

    def __init__(self, dim: int, settings: IndexSettings | None = None) -> None:
        self.dim = dim
        self.settings = settings or IndexSettings()
        self._scopes: dict[str, _Scope] = {}
        self._scope_of: dict[int, str] = {}

    def __len__(self) -> int:
        return len(self._scope_of)

    def __contains__(self, entry_id: int) -> bool:
        return entry_id in self._scope_of

    def add(self, scope: str, entry_id: int, vector: Vectors) -> None:
        if entry_id in self._scope_of:
            self.remove(entry_id)
        state = self._scopes.get(scope)
        if state is None:
            state = self._scopes[scope] = _Scope(self._flat())
        vec = np.ascontiguousarray(vector, dtype=np.float32).reshape(1, self.dim)
        state.index.add_with_ids(vec, np.array([entry_id], dtype=np.int64))
        state.vectors[entry_id] = vec[0]
        self._scope_of[entry_id] = scope
        if not state.hnsw and len(state.vectors) >= self.settings.hnsw_from:
            self._rebuild(state, hnsw=True)

    def remove(self, entry_id: int) -> None:
        scope = self._scope_of.pop(entry_id, None)
        if scope is None:
            return
        state = self._scopes[scope]
        del state.vectors[entry_id]
        if not state.vectors:
            del self._scopes[scope]
        elif state.hnsw:
            state.dead += 1
            if state.dead * 4 >= len(state.vectors) + state.dead:
                self._rebuild(state, hnsw=True)
        else:
            # faiss's Python wrapper takes an id array here (its stub says IDSelector).
            state.index.remove_ids(np.array([entry_id], dtype=np.int64))  # type: ignore[arg-type]

    def search(self, scope: str, vector: Vectors, k: int = 4) -> list[tuple[int, float]]:
        """Up to ``k`` live ``(id, cosine)`` pairs of ``scope``, best first."""
        state = self._scopes.get(scope)
        if state is None:
            return []
        query = np.ascontiguousarray(vector, dtype=np.float32).reshape(1, self.dim)
        # Tombstoned neighbours are skipped, so ask for a few more (a lost one is only a miss).
        extra = min(state.dead, 4 * k) if state.hnsw else 0
        scores, ids = state.index.search(query, k + extra)
        out = []
        for score, entry_id in zip(scores[0], ids[0], strict=True):
            if entry_id >= 0 and int(entry_id) in state.vectors:
                out.append((int(entry_id), float(score)))
        return out[:k]

    def clear(self) -> None:
        self._scopes.clear()
        self._scope_of.clear()

    def _flat(self) -> faiss.Index:
        import faiss

        return faiss.IndexIDMap2(faiss.IndexFlatIP(self.dim))

    def _hnsw(self) -> faiss.Index:
        import faiss

        s = self.settings
        inner = faiss.IndexHNSWFlat(self.dim, s.hnsw_m, faiss.METRIC_INNER_PRODUCT)
        inner.hnsw.efConstruction = s.ef_construction
        inner.hnsw.efSearch = s.ef_search
        return faiss.IndexIDMap2(inner)

    def _rebuild(self, state: _Scope, *, hnsw: bool) -> None:
        index = self._hnsw() if hnsw else self._flat()
        if state.vectors:
            ids = np.fromiter(state.vectors, dtype=np.int64, count=len(state.vectors))
            matrix: npt.NDArray[np.float32] = np.stack(list(state.vectors.values()))
            index.add_with_ids(matrix, ids)
        state.index, state.hnsw, state.dead = index, hnsw, 0
