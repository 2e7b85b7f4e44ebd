"""Policy schema: the gateway's exact and semantic response cache."""

from __future__ import annotations

from typing import Literal, Self

from pydantic import Field, model_validator

from gateway.schema.strict import PositiveSeconds, _Strict

# At most one wrong answer in fifty semantic hits (vCache's default bound, arXiv 2502.03771):
# the verifier's threshold is chosen so that the rate holds on held-out QQP train pairs with
# 95% confidence (`gateway/cache/judgement/false_hit_bound.py`); measured on the QQP test
# split in docs/benchmarks/cache.md.
DEFAULT_MAX_FALSE_HIT_RATE = 0.02


class CrossEncoderSettings(_Strict):
    """The cross-encoder verifier (``gateway/cache/judgement/cross_encoder.py``): run on the best
    candidate above its cosine floor only, off the event loop, each wait bounded."""

    path: str | None = Field(
        default=None, description="Weights file (.npz; default: the one shipped)"
    )
    timeout_s: float = Field(
        default=0.05,
        gt=0,
        le=10,
        description="Longest wait for a verification; a later one is a miss (the request "
        "goes to the backend)",
    )
    max_batch: int = Field(default=8, ge=1, le=256, description="Pairs per forward pass")
    max_pending: int = Field(
        default=32, ge=1, le=4096, description="Pairs waiting at most; more are misses"
    )


class CacheVerify(_Strict):
    """Sampled verification of semantic hits: per-entry thresholds that tighten from
    evidence (``gateway/cache/store/evidence.py``, ``gateway/cache/verification/sampling.py``).
    Off by default."""

    sample: float = Field(
        default=0.0,
        ge=0,
        le=1,
        description="Share of semantic hits also sent to the backend in the background, "
        "the two answers compared; 0 = off",
    )
    max_inflight: int = Field(
        default=2,
        ge=1,
        le=64,
        description="Verifications at once; more sampled hits are skipped (as are those "
        "meeting a pool with no free slot)",
    )
    answer_min_cosine: float = Field(
        default=0.9,
        gt=0,
        le=1,
        description="Least cosine of two answers' embeddings for them to agree (after "
        "identical text and equal numbers)",
    )
    margin: float = Field(
        default=0.01,
        ge=0,
        le=0.5,
        description="A disagreeing entry's least cosine rises to the disagreeing "
        "question's cosine plus this",
    )
    max_disagreements: int = Field(
        default=2,
        ge=1,
        le=1000,
        description="After this many disagreements an entry serves exact hits only",
    )


class SemanticCache(_Strict):
    """Answers for differently worded questions: embeddings, a per-scope index, a verifier.

    Which rule decides a hit: with ``threshold`` set (and ``max_false_hit_rate`` not), the
    old one, cosine at least ``threshold`` and then the guard; otherwise the verifier, at
    the threshold derived from ``max_false_hit_rate``. Setting both is an error.
    """

    enabled: bool = Field(default=True, description="false: the exact cache only")
    max_false_hit_rate: float = Field(
        default=DEFAULT_MAX_FALSE_HIT_RATE,
        gt=0,
        lt=0.5,
        description="Largest share of semantic hits that may be wrong answers; the verifier's "
        "threshold is derived from it on held-out calibration pairs (`latency-gateway "
        "cache-curve` prints the curve)",
    )
    threshold: float | None = Field(
        default=None,
        gt=0,
        le=1,
        description="Old rule, for policies that set it: least cosine of a semantic hit, then "
        "the guard; no verifier. Not together with max_false_hit_rate",
    )
    guard: bool = Field(
        default=True,
        description="Refuse matches differing in negation, numbers, dates, names (with "
        "`threshold`: the only check after the cosine; with the verifier: one of its inputs "
        "and a veto)",
    )
    verifier: Literal["cross_encoder", "features"] = Field(
        default="cross_encoder",
        description="Which verifier decides a hit: a cross-encoder reading both questions "
        "(the best candidate only), or the small network over pair features (every "
        "candidate); a cross-encoder that cannot be loaded falls back to the features",
    )
    verifier_path: str | None = Field(
        default=None,
        description="Feature verifier weights file (.npz; default: the one shipped)",
    )
    cross_encoder: CrossEncoderSettings = Field(
        default=CrossEncoderSettings(), description="Settings of the cross-encoder verifier"
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
    verify: CacheVerify = Field(
        default=CacheVerify(),
        description="Sampled verification of semantic hits (per-entry thresholds that tighten "
        "from evidence)",
    )

    @model_validator(mode="after")
    def _one_rule(self) -> Self:
        if self.threshold is not None and "max_false_hit_rate" in self.model_fields_set:
            raise ValueError(
                "set either max_false_hit_rate (the verifier) or threshold (cosine and the "
                "guard only), not both"
            )
        return self

    @property
    def uses_verifier(self) -> bool:
        return self.threshold is None


class CacheRedis(_Strict):
    """Where a shared cache lives when ``store: redis``."""

    url: str = Field(
        default="redis://127.0.0.1:6379/0", description="Redis URL (redis://, rediss:// or unix://)"
    )
    key_prefix: str = Field(
        description="Prefix of every key the cache writes",
        default="lgw:cache",
        min_length=1,
        max_length=128,
    )
    timeout_s: PositiveSeconds = Field(default=0.25, description="Per-command; then a miss")


class Cache(_Strict):
    """Response cache: exact, then semantic; deterministic requests only."""

    enabled: bool = Field(
        default=False, description="Turn the response cache on (deterministic requests only)"
    )
    store: Literal["memory", "redis"] = Field(
        default="memory", description="memory (per replica) or redis (shared by every replica)"
    )
    ttl_s: PositiveSeconds = Field(default=3600.0, description="Seconds an entry lives")
    max_entries: int = Field(
        description="Entries kept; the least recently used go first",
        default=100_000,
        ge=1,
        le=100_000_000,
    )
    any_temperature: bool = Field(
        default=False, description="Also cache requests with temperature above 0"
    )
    semantic: SemanticCache = Field(
        default=SemanticCache(),
        description="Answers for differently worded questions: embeddings, a per-scope index, a "
        "verifier",
    )
    redis: CacheRedis = Field(default=CacheRedis(), description="Redis connection of store: redis")
