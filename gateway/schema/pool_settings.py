"""Policy schema: pools and what governs them (timeouts, retries, breaker, limits,
admission and its ladder, compression) and cluster admission; replica choice and recovery
are in ``replica_settings``."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from gateway.schema.replica_settings import Recovery, Scheduling
from gateway.schema.strict import Name, PositiveSeconds, _Strict


class Timeouts(_Strict):
    """Upstream timeouts of a pool (seconds)."""

    connect_s: PositiveSeconds = Field(
        default=5.0, description="Seconds to open a connection to a replica"
    )
    first_token_s: PositiveSeconds = Field(
        default=60.0,
        description="Seconds from dispatch to the first token (or the whole answer's head); 504 "
        "beyond",
    )
    idle_s: PositiveSeconds = Field(
        default=60.0, description="Longest silence between two events of a stream"
    )
    total_s: PositiveSeconds = Field(
        default=600.0, description="Longest a request may take from dispatch to its last byte"
    )


class Retry(_Strict):
    """Retries before the first byte reached the client, on other backends of the pool."""

    attempts: int = Field(default=3, ge=1, le=10, description="Tries in this pool, first included")
    backoff_initial_s: float = Field(
        description="First backoff between tries (exponential, with jitter)",
        default=0.05,
        ge=0,
        le=60,
    )
    backoff_max_s: float = Field(
        description="Largest backoff between tries", default=1.0, ge=0, le=600
    )
    jitter_s: float = Field(
        description="Random jitter added to each backoff", default=0.05, ge=0, le=60
    )


class Summary(_Strict):
    """Summaries of the dropped turns, written in the background by another (small) pool."""

    enabled: bool = Field(
        default=False,
        description="Write summaries of the dropped turns (else the note only says they were "
        "left out)",
    )
    pool: Name | None = Field(default=None, description="The pool that writes summaries")
    max_tokens: int = Field(default=512, ge=16, le=32_768, description="Longest summary")
    timeout_s: PositiveSeconds = Field(
        default=30.0, description="Seconds a summary request may take"
    )
    max_input_tokens: int = Field(
        default=16_384, ge=64, le=10_000_000, description="Longer dropped runs are not summarised"
    )


class Compression(_Strict):
    """History compression over a token budget (off by default; x-gateway-rewrite: off skips)."""

    enabled: bool = Field(default=False, description="Turn compression on for this pool")
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
    summary: Summary = Field(
        default=Summary(),
        description="Replace the dropped turns by a summary written by a small pool, in the "
        "background",
    )


class Breaker(_Strict):
    """Per-backend outlier ejection: trip on a failure streak or rate, cool down, probe."""

    consecutive_failures: int = Field(
        description="Trip after this many failures in a row", default=5, ge=1, le=1000
    )
    failure_rate: float = Field(
        description="...or when this share of the last `window` outcomes failed",
        default=0.5,
        gt=0,
        le=1,
    )
    window: int = Field(
        description="Outcomes the failure rate is computed over", default=20, ge=1, le=10_000
    )
    min_requests: int = Field(
        description="Outcomes needed in the window before the rate can trip",
        default=10,
        ge=1,
        le=10_000,
    )
    cooldown_s: PositiveSeconds = Field(
        default=10.0, description="Seconds an ejected replica stays out before a half-open probe"
    )
    max_cooldown_s: PositiveSeconds = Field(
        default=120.0, description="A failed probe doubles the cooldown, up to this"
    )
    half_open_probes: int = Field(
        description="Probe requests let through after the cooldown", default=1, ge=1, le=1000
    )

    @model_validator(mode="after")
    def _consistent(self) -> Breaker:
        if self.min_requests > self.window:
            raise ValueError("min_requests cannot exceed window")
        if self.max_cooldown_s < self.cooldown_s:
            raise ValueError("max_cooldown_s cannot be below cooldown_s")
        return self


class Limit(_Strict):
    """The pool's concurrency limit: static, or adaptive on time to first token."""

    kind: Literal["static", "aimd", "gradient"] = Field(
        default="static",
        description="static (default: sum of the backends' max_inflight), aimd or gradient "
        "(adapt on time to first token)",
    )
    initial: int | None = Field(default=None, ge=1, description="Default: the pool's capacity")
    min_limit: int = Field(
        description="aimd/gradient: the limit never goes below this", default=1, ge=1
    )
    max_limit: int | None = Field(default=None, ge=1, description="Default: the pool's capacity")
    target_ttft_s: PositiveSeconds = Field(default=1.0, description="aimd: shrink above this")
    backoff_ratio: float = Field(default=0.9, gt=0, lt=1, description="aimd: shrink factor")
    tolerance: float = Field(default=1.5, ge=1, le=10, description="gradient: latency slack")


class LadderStep(_Strict):
    """One rung of the overload ladder: active when any of its thresholds is reached."""

    action: Literal["degrade", "shed_sheddable", "shed_standard"] = Field(
        description="What the step does: degrade auto-routed requests, shed sheddable ones, or "
        "shed standard ones too"
    )
    queue_depth: int | None = Field(
        description="Active at this many queued requests", default=None, ge=0
    )
    wait_s: float | None = Field(
        description="Active at this predicted queue wait (seconds)", default=None, ge=0
    )
    backend_waiting: float | None = Field(
        description="Active at this many requests waiting inside the pool's engines (scraped)",
        default=None,
        ge=0,
    )
    kv_usage: float | None = Field(
        description="Active at this KV-cache usage of the pool's engines (scraped, 0-1)",
        default=None,
        ge=0,
        le=1,
    )

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
    limit: Limit = Field(
        default=Limit(),
        description="The pool's concurrency limit: static (sum of max_inflight) or adaptive",
    )
    max_queue: int = Field(default=1024, ge=0, description="Hard cap, every priority")
    max_queue_long: int = Field(default=128, ge=0, description="Hard cap of the long lane")
    max_wait_s: float | None = Field(
        default=None, gt=0, description="Hard limit: shed beyond this predicted wait"
    )
    long_prompt_tokens: int = Field(default=2000, ge=1, description="Long lane from here")
    long_lane_share: float = Field(
        description="Share of dispatches the long lane gets when both lanes wait",
        default=0.25,
        gt=0,
        lt=1,
    )
    max_prefill_tokens: int | None = Field(
        default=None,
        ge=1,
        description="Prefill pacing: prompt tokens admitted but not yet at their first token,"
        " pool-wide; more waits in the gateway (default: no pacing)",
    )
    degrade_to: Name | None = Field(default=None, description="Pool for the ladder's degrade")
    ladder: list[LadderStep] = Field(
        description="Overload steps, cumulative; each is active when any of its thresholds is "
        "reached",
        default_factory=list,
    )
    hysteresis: float = Field(
        description="A step clears when all its signals fall below this share of their thresholds",
        default=0.8,
        gt=0,
        le=1,
    )


class Pool(_Strict):
    """Settings of a pool; pools are created by the backends that name them."""

    timeouts: Timeouts = Field(
        default=Timeouts(),
        description="Bounds on connecting, the first token, silences and the whole request",
    )
    retry: Retry = Field(
        default=Retry(), description="Retries before the first byte, each on another replica"
    )
    breaker: Breaker = Field(
        default=Breaker(), description="Per-replica circuit breaker (outlier ejection)"
    )
    admission: Admission = Field(
        default=Admission(),
        description="The gateway's own queue in front of the pool: TTFT objective, limit, hard "
        "caps, overload ladder",
    )
    compression: Compression = Field(
        default=Compression(),
        description="Fit long conversations into a token budget instead of refusing them (off by "
        "default)",
    )
    max_context: int | None = Field(
        default=None, ge=1, description="Context window; longer requests get a 400"
    )
    fallback: list[Name] = Field(
        default_factory=list,
        description="Pools to try, in order, when this one cannot serve (x-gateway-degraded)",
    )
    scheduling: Scheduling = Field(
        default=Scheduling(), description="Replica choice: filters, weighted scorers, best score"
    )
    recovery: Recovery = Field(
        default=Recovery(),
        description="After dispatch: hedging a late first token, failing over a stalled replica, "
        "continuing a cut stream",
    )


class RetryBudget(_Strict):
    """Retries are at most ``ratio`` of requests over ``window_s``, plus a small floor."""

    ratio: float = Field(
        description="Retries allowed, as a share of requests over the window",
        default=0.1,
        ge=0,
        le=1,
    )
    window_s: PositiveSeconds = Field(
        default=10.0, description="Sliding window of the budget, in seconds"
    )
    min_retries_per_s: float = Field(
        description="Retries per second always allowed, so a quiet gateway can still retry",
        default=0.5,
        ge=0,
        le=10_000,
    )


class Cluster(_Strict):
    """Cluster-wide admission through Redis: the replicas share each pool's limit (off by default).

    Each pool's concurrency limit becomes the limit of the whole cluster, enforced with leases
    in Redis; when Redis is unreachable each replica falls back to its share of the limit.
    """

    enabled: bool = Field(
        default=False,
        description="Share each pool's limit with the other replicas through Redis (read at start)",
    )
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
