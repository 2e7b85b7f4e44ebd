"""Policy schema: pools and what governs them (timeouts, retries, breaker, limits,
admission and its ladder, scheduling, compression) and cluster admission."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from gateway.schema.strict import Name, PositiveSeconds, _Strict


class Timeouts(_Strict):
    """Upstream timeouts of a pool (seconds)."""

    connect_s: PositiveSeconds = 5.0
    first_token_s: PositiveSeconds = 60.0
    idle_s: PositiveSeconds = 60.0
    total_s: PositiveSeconds = 600.0


class Retry(_Strict):
    """Retries before the first byte reached the client, on other backends of the pool."""

    attempts: int = Field(default=3, ge=1, le=10, description="Tries in this pool, first included")
    backoff_initial_s: float = Field(default=0.05, ge=0, le=60)
    backoff_max_s: float = Field(default=1.0, ge=0, le=600)
    jitter_s: float = Field(default=0.05, ge=0, le=60)


class Summary(_Strict):
    """Summaries of the dropped turns, written in the background by another (small) pool."""

    enabled: bool = False
    pool: Name | None = Field(default=None, description="The pool that writes summaries")
    max_tokens: int = Field(default=512, ge=16, le=32_768, description="Longest summary")
    timeout_s: PositiveSeconds = 30.0
    max_input_tokens: int = Field(
        default=16_384, ge=64, le=10_000_000, description="Longer dropped runs are not summarised"
    )


class Compression(_Strict):
    """History compression over a token budget (off by default; x-gateway-rewrite: off skips)."""

    enabled: bool = False
    budget_tokens: int | None = Field(
        default=None, ge=64, description="Prompt tokens allowed; default: max_context - completion"
    )
    keep_last_turns: int = Field(default=4, ge=1, le=1000, description="Recent turns kept")
    step_tokens: int | None = Field(
        default=None, ge=1, description="Cut granularity (stable prefixes); default budget/4"
    )
    reserve_tokens: int = Field(
        default=256, ge=1, description="Completion room when the client sets no max_tokens"
    )
    context_margin: float = Field(
        default=0.1,
        ge=0,
        lt=0.5,
        description="Share of the window's prompt room left free for the token estimate's error",
    )
    summary: Summary = Summary()


class Breaker(_Strict):
    """Per-backend outlier ejection: trip on a failure streak or rate, cool down, probe."""

    consecutive_failures: int = Field(default=5, ge=1, le=1000)
    failure_rate: float = Field(default=0.5, gt=0, le=1)
    window: int = Field(default=20, ge=1, le=10_000)
    min_requests: int = Field(default=10, ge=1, le=10_000)
    cooldown_s: PositiveSeconds = 10.0
    max_cooldown_s: PositiveSeconds = 120.0
    half_open_probes: int = Field(default=1, ge=1, le=1000)

    @model_validator(mode="after")
    def _consistent(self) -> Breaker:
        if self.min_requests > self.window:
            raise ValueError("min_requests cannot exceed window")
        if self.max_cooldown_s < self.cooldown_s:
            raise ValueError("max_cooldown_s cannot be below cooldown_s")
        return self


class Limit(_Strict):
    """The pool's concurrency limit: static, or adaptive on time to first token."""

    kind: Literal["static", "aimd", "gradient"] = "static"
    initial: int | None = Field(default=None, ge=1, description="Default: the pool's capacity")
    min_limit: int = Field(default=1, ge=1)
    max_limit: int | None = Field(default=None, ge=1, description="Default: the pool's capacity")
    target_ttft_s: PositiveSeconds = Field(default=1.0, description="aimd: shrink above this")
    backoff_ratio: float = Field(default=0.9, gt=0, lt=1, description="aimd: shrink factor")
    tolerance: float = Field(default=1.5, ge=1, le=10, description="gradient: latency slack")


class LadderStep(_Strict):
    """One rung of the overload ladder: active when any of its thresholds is reached."""

    action: Literal["degrade", "shed_sheddable", "shed_standard"]
    queue_depth: int | None = Field(default=None, ge=0)
    wait_s: float | None = Field(default=None, ge=0)
    backend_waiting: float | None = Field(default=None, ge=0)
    kv_usage: float | None = Field(default=None, ge=0, le=1)

    @model_validator(mode="after")
    def _has_threshold(self) -> LadderStep:
        thresholds = (self.queue_depth, self.wait_s, self.backend_waiting, self.kv_usage)
        if all(t is None for t in thresholds):
            raise ValueError("give at least one of queue_depth, wait_s, backend_waiting, kv_usage")
        return self


class Objective(_Strict):
    """The time-to-first-token objective admission protects. Below saturation a request is
    refused only past its deadline; while the pool is saturated (work waiting and arriving
    faster than it drains), also past its objective. Critical requests are exempt."""

    ttft_s: PositiveSeconds = Field(
        default=2.0, description="Objective of short and medium prompts, seconds"
    )
    long_s_per_1k_tokens: float = Field(
        default=1.0,
        ge=0,
        le=600,
        description="Long prompts: this much longer per 1,000 tokens past long_prompt_tokens",
    )
    priority: dict[Literal["critical", "standard", "sheddable"], PositiveSeconds] = Field(
        default_factory=dict, description="ttft_s for one priority instead of the pool's"
    )
    deadline_factor: float = Field(
        default=3.0,
        ge=1,
        le=1000,
        description="A request's deadline when it sends no x-gateway-deadline-ms: this times "
        "its objective; a request predicted past it is refused at arrival (waiting longer is "
        "useless), one predicted somewhat late is served while the pool keeps up",
    )


class Admission(_Strict):
    """Gateway-side queueing and shedding for a pool."""

    objective: Objective | None = Field(
        default_factory=Objective,
        description="TTFT objective (null: no prediction-based shedding, hard limits only)",
    )
    degrade_margin: float = Field(
        default=0.1,
        ge=0,
        le=1,
        description="An auto-routed request whose difficulty is this close to the boundary "
        "that chose this pool goes to the smaller pool when this one cannot meet its objective",
    )
    limit: Limit = Limit()
    max_queue: int = Field(default=1024, ge=0, description="Hard cap, every priority")
    max_queue_long: int = Field(default=128, ge=0, description="Hard cap of the long lane")
    max_wait_s: float | None = Field(
        default=None, gt=0, description="Hard limit: shed beyond this predicted wait"
    )
    long_prompt_tokens: int = Field(default=2000, ge=1, description="Long lane from here")
    long_lane_share: float = Field(default=0.25, gt=0, lt=1)
    max_prefill_tokens: int | None = Field(
        default=None,
        ge=1,
        description="Prefill pacing: prompt tokens admitted but not yet at their first token,"
        " pool-wide; more waits in the gateway (default: no pacing)",
    )
    degrade_to: Name | None = Field(default=None, description="Pool for the ladder's degrade")
    ladder: list[LadderStep] = Field(default_factory=list)
    hysteresis: float = Field(default=0.8, gt=0, le=1)


class ScorerWeights(_Strict):
    """Weights of the replica scorers; each scorer gives a score in [0, 1]."""

    prefix: float = Field(default=3.0, ge=0, le=1000, description="Likely prefix-cache hit")
    queue: float = Field(default=1.0, ge=0, le=1000, description="Fewest requests in flight")
    kv_cache: float = Field(default=0.5, ge=0, le=1000, description="Most free KV cache")
    latency: float = Field(default=0.5, ge=0, le=1000, description="Lowest EWMA of TTFT")
    session: float = Field(default=2.0, ge=0, le=1000, description="The session's last replica")


class Scheduling(_Strict):
    """Replica choice inside a pool: filters, weighted scorers, best score (seeded ties)."""

    weights: ScorerWeights = ScorerWeights()
    imbalance_guard: int = Field(
        default=8,
        ge=0,
        le=100_000,
        description="A replica this many requests busier than the least loaded loses its prefix"
        " credit",
    )
    prefix_block_chars: int = Field(default=256, ge=16, le=65_536)
    prefix_blocks_per_backend: int = Field(default=16_384, ge=1, le=10_000_000)
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
    max_sessions: int = Field(default=100_000, ge=1, le=10_000_000)
    session_ttl_s: PositiveSeconds = 1800.0
    latency_ewma_alpha: float = Field(default=0.2, gt=0, le=1)
    seed: int = Field(default=0, ge=0)


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


class Pool(_Strict):
    """Settings of a pool; pools are created by the backends that name them."""

    timeouts: Timeouts = Timeouts()
    retry: Retry = Retry()
    breaker: Breaker = Breaker()
    admission: Admission = Admission()
    compression: Compression = Compression()
    max_context: int | None = Field(
        default=None, ge=1, description="Context window; longer requests get a 400"
    )
    fallback: list[Name] = Field(
        default_factory=list,
        description="Pools to try, in order, when this one cannot serve (x-gateway-degraded)",
    )
    scheduling: Scheduling = Scheduling()
    recovery: Recovery = Recovery()


class RetryBudget(_Strict):
    """Retries are at most ``ratio`` of requests over ``window_s``, plus a small floor."""

    ratio: float = Field(default=0.1, ge=0, le=1)
    window_s: PositiveSeconds = 10.0
    min_retries_per_s: float = Field(default=0.5, ge=0, le=10_000)


class Cluster(_Strict):
    """Cluster-wide admission through Redis: the replicas share each pool's limit (off by default).

    Each pool's concurrency limit becomes the limit of the whole cluster, enforced with leases
    in Redis; when Redis is unreachable each replica falls back to its share of the limit.
    """

    enabled: bool = False
    redis_url: str = Field(
        default="redis://127.0.0.1:6379/0", description="redis://, rediss:// or unix:// URL"
    )
    key_prefix: Name = Field(default="latency-gateway", description="Prefix of every Redis key")
    lease_ttl_s: float = Field(
        default=10.0, ge=0.1, le=3600, description="A crashed replica's leases expire after this"
    )
    renew_interval_s: float = Field(
        default=2.0, gt=0, le=600, description="Leases and heartbeats are renewed this often"
    )
    op_timeout_s: float = Field(
        default=0.1, gt=0, le=5, description="Longest a Redis call may take before fallback"
    )
    poll_s: float = Field(
        default=0.05, gt=0, le=10, description="How often waiters retry a full cluster"
    )
    fallback_replicas: int = Field(
        default=1,
        ge=1,
        le=10_000,
        description="Replicas assumed for the local share until Redis was read once",
    )

    @field_validator("redis_url")
    @classmethod
    def _redis_url(cls, value: str) -> str:
        if not value.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("must start with redis://, rediss:// or unix://")
        return value

    @model_validator(mode="after")
    def _renew_within_ttl(self) -> Cluster:
        # Two renewals per TTL: one late or lost renewal does not let a live lease expire.
        if self.renew_interval_s * 2 > self.lease_ttl_s:
            raise ValueError("renew_interval_s must be at most half of lease_ttl_s")
        return self
