"""A cached answer, the facts needed to find it again, and what verification learnt of it.

Serialised as JSON (the Redis store); ``evidence`` (``evidence.py``) is written with the
entry and read as none from entries stored before it existed.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

from gateway.cache.store.evidence import NONE, Evidence
from gateway.embedding.encoder import Vectors


@dataclass(frozen=True, slots=True)
class Entry:
    id: int
    exact: str  # exact key (keys.RequestKeys.exact)
    scope: str  # semantic scope
    query: str | None  # the question as asked, for the guard
    vector: Vectors | None  # its embedding (None: exact-only entry)
    answer: dict[str, Any]  # a whole chat.completion / text_completion object
    completion_tokens: int | None
    evidence: Evidence = NONE  # sampled verifications of its semantic hits

    def fits(self, max_tokens: int | None) -> bool:
        """Whether a live answer under ``max_tokens`` would have finished the same way."""
        if max_tokens is None:
            return True
        return self.completion_tokens is not None and self.completion_tokens <= max_tokens

    def to_json(self) -> bytes:
        vector = None
        if self.vector is not None:
            vector = base64.b64encode(self.vector.astype(np.float32).tobytes()).decode()
        return orjson.dumps(
            {
                "id": self.id,
                "exact": self.exact,
                "scope": self.scope,
                "query": self.query,
                "vector": vector,
                "answer": self.answer,
                "completion_tokens": self.completion_tokens,
                "evidence": self.evidence.to_dict(),
            }
        )

    @classmethod
    def from_json(cls, raw: bytes | str) -> Entry:
        data = orjson.loads(raw)
        vector = None
        if data.get("vector"):
            vector = np.frombuffer(base64.b64decode(data["vector"]), dtype=np.float32).copy()
        return cls(
            id=int(data["id"]),
            exact=str(data["exact"]),
            scope=str(data["scope"]),
            query=data.get("query"),
            vector=vector,
            answer=dict(data["answer"]),
            completion_tokens=data.get("completion_tokens"),
            evidence=Evidence.from_dict(data.get("evidence")),
        )
