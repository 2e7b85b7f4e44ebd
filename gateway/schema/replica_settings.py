"""Policy schema: replica choice inside a pool, and what happens after dispatch."""

from __future__ import annotations

from pydantic import Field

from gateway.schema.strict import PositiveSeconds, _Strict


class ScorerWeights(_Strict):
    """Weights of the replica scorers; each scorer gives a score in [0, 1]."""

    prefix: float = Field(default=3.0, ge=0, le=1000, description="Likely prefix-cache hit")
    queue: float = Field(default=1.0, ge=0, le=1000, description="Fewest requests in flight")
    kv_cache: float = Field(default=0.5, ge=0, le=1000, description="Most free KV cache")
    latency: float = Field(default=0.5, ge=0, le=1000, description="Lowest EWMA of TTFT")
    session: float = Field(default=2.0, ge=0, le=1000, description="The session's last replica")


class Scheduling(_Strict):
    """Replica choice inside a pool: filters, weighted scorers, best score (seeded ties)."""

    weights: ScorerWeights = Field(
        default=ScorerWeights(), description="Weight of each replica scorer"
    )
    imbalance_guard: int = Field(
        default=8,
        ge=0,
        le=100_000,
        description="A replica this many requests busier than the least loaded loses its prefix"
        " credit",
    )
    prefix_block_chars: int = Field(
        description="Granularity of the prefix index, in characters of the canonical prompt",
        default=256,
        ge=16,
        le=65_536,
    )
    prefix_blocks_per_backend: int = Field(
        description="Prefix blocks remembered per replica (LRU)",
        default=16_384,
        ge=1,
        le=10_000_000,
    )
    spread_new_prefixes: bool = Field(
        default=True,
        description="A prefix no replica holds goes to the replica with the least cached work"
        " when loads are level",
    )
    level_kv_usage: float = Field(
        default=0.05, ge=0, le=1, description="KV usage differences below this count as level"
    )
    work_half_life_s: PositiveSeconds = Field(
        default=600.0, description="Half-life of a replica's cached work (new prefix blocks)"
    )
    max_sessions: int = Field(
        description="Entries of the session-affinity table (x-gateway-session, else `user`)",
        default=100_000,
        ge=1,
        le=10_000_000,
    )
    session_ttl_s: PositiveSeconds = Field(
        default=1800.0, description="Seconds a session's replica is remembered"
    )
    latency_ewma_alpha: float = Field(
        description="Weight of the newest TTFT in the latency scorer's moving average",
        default=0.2,
        gt=0,
        le=1,
    )
    seed: int | None = Field(
        description="Seed of the draw between equally scored replicas; default: drawn per "
        "process, so gateway replicas and workers do not all pick the same replica at once",
        default=None,
        ge=0,
    )


class Recovery(_Strict):
    """After dispatch: race a late first token, fail over a stalled replica, and continue a
    stream whose replica dies, on another replica of the pool."""

    hedge: bool = Field(
        default=True,
        description="A first token late past its prediction's upper band is raced on another "
        "replica predicted to be sooner; the first first token wins, the other is cancelled",
    )
    hedge_after: float = Field(
        default=1.0,
        ge=1,
        le=100,
        description="A first token is late (a hedge may go out) past this many times its "
        "prediction's calibrated upper band (the p90; at least stall_min_s / stall_factor)",
    )
    hedge_budget: float = Field(
        default=0.05,
        ge=0,
        le=1,
        description="Hedges are at most this share of the pool's recent requests",
    )
    hedge_calm_s: float = Field(
        default=30.0,
        ge=0,
        le=3600,
        description="No hedge goes out while the pool is saturated, nor until it has been "
        "unsaturated this long: a lull between bursts is not spare capacity",
    )
    stall_factor: float = Field(
        default=4.0,
        ge=1,
        le=1000,
        description="A replica that sends no first token within this many times its "
        "prediction's upper band (at least stall_min_s) is failed over",
    )
    stall_min_s: PositiveSeconds = Field(
        default=0.25,
        description="The stall limit's floor: with the hedge budget spent, a stalled "
        "request waits this long at least before it moves",
    )
    continue_streams: bool = Field(
        default=True,
        description="A stream cut short after some tokens goes on on another replica that "
        "continues the text so far (backends' continue_with)",
    )
    max_continuations: int = Field(default=2, ge=0, le=10, description="Per request")
    max_take_backs: int = Field(
        default=1,
        ge=0,
        le=10,
        description="Per request: how often a request found queued inside an engine beyond "
        "its batch may be taken back (to another replica with a free slot, or to the "
        "gateway's queue, which gives it the pool's next free slot; it stays when that "
        "engine is the pool's only replica and its first token there is predicted by its "
        "deadline, or its objective in a saturated pool); 0: never",
    )
