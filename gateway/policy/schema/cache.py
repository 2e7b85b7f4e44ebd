"""Policy schema: the gateway's exact and semantic response cache."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gateway.policy.schema._base import PositiveSeconds, _Strict


class SemanticCache(_Strict):
    """Answers for differently worded questions: embeddings, a per-scope index, a guard."""

    enabled: bool = True
    threshold: float = Field(
        default=0.92, gt=0, le=1, description="Least cosine similarity of a semantic hit"
    )
    guard: bool = Field(
        default=True, description="Refuse matches differing in negation, numbers, dates, names"
    )
    candidates: int = Field(default=4, ge=1, le=64, description="Neighbours checked per lookup")
    max_query_chars: int = Field(
        default=1000, ge=1, le=100_000, description="Longer questions use the exact cache only"
    )
    model_path: str | None = Field(
        default=None, description="sentence-transformers model directory (default: bundled)"
    )
    max_batch: int = Field(default=32, ge=1, le=1024, description="Texts per embedding batch")
    embed_timeout_s: float = Field(
        default=0.2, gt=0, le=60, description="Longer waits for an embedding skip the lookup"
    )
    threads: int = Field(
        default=1,
        ge=1,
        le=256,
        description="torch CPU threads; more than 1 stalls badly when the cores are busy",
    )


class CacheRedis(_Strict):
    """Where a shared cache lives when ``store: redis``."""

    url: str = "redis://127.0.0.1:6379/0"
    key_prefix: str = Field(default="lgw:cache", min_length=1, max_length=128)
    timeout_s: PositiveSeconds = Field(default=0.25, description="Per-command; then a miss")


class Cache(_Strict):
    """Response cache: exact, then semantic; deterministic requests only."""

    enabled: bool = False
    store: Literal["memory", "redis"] = "memory"
    ttl_s: PositiveSeconds = 3600.0
    max_entries: int = Field(default=100_000, ge=1, le=100_000_000)
    any_temperature: bool = Field(
        default=False, description="Also cache requests with temperature above 0"
    )
    semantic: SemanticCache = SemanticCache()
    redis: CacheRedis = CacheRedis()
