"""The policy file's schema: pydantic models that refuse unknown keys.

This is the first of two steps. It checks each field on its own (types, ranges, enums); the
compile step (``compile.py``) checks what fields say about each other.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Name = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9][\w.\-/:]*$")]
PositiveSeconds = Annotated[float, Field(gt=0, le=86_400)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Engine(StrEnum):
    VLLM = "vllm"
    TGI = "tgi"
    OPENAI = "openai"
    LLAMACPP = "llamacpp"


class Backend(_Strict):
    """One inference server replica."""

    name: Name
    url: str = Field(description="Base URL of the server, e.g. http://10.0.0.5:8000")
    engine: Engine = Engine.OPENAI
    model: str = Field(min_length=1, description="The model name the backend serves")
    pool: Name
    max_inflight: int = Field(default=64, ge=1, le=100_000)

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        rest = value.split("://", 1)[1]
        if not rest or rest.startswith("/"):
            raise ValueError("must name a host")
        return value.rstrip("/")


class Model(_Strict):
    """A public model name: either pinned to a pool or routed by the gateway."""

    pool: Name | None = None
    route: Literal["auto"] | None = None
    description: str | None = None

    @model_validator(mode="after")
    def _one_target(self) -> Model:
        if (self.pool is None) == (self.route is None):
            raise ValueError("give exactly one of 'pool' or 'route'")
        return self


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


class Admission(_Strict):
    """Gateway-side queueing and shedding for a pool."""

    limit: Limit = Limit()
    max_queue: int = Field(default=1024, ge=0, description="Hard cap, every priority")
    max_queue_long: int = Field(default=128, ge=0, description="Hard cap of the long lane")
    max_wait_s: float = Field(default=30.0, gt=0, description="Shed beyond this estimated wait")
    long_prompt_tokens: int = Field(default=2000, ge=1, description="Long lane from here")
    long_lane_share: float = Field(default=0.25, gt=0, lt=1)
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
    max_sessions: int = Field(default=100_000, ge=1, le=10_000_000)
    session_ttl_s: PositiveSeconds = 1800.0
    latency_ewma_alpha: float = Field(default=0.2, gt=0, le=1)
    seed: int = Field(default=0, ge=0)


class Pool(_Strict):
    """Settings of a pool; pools are created by the backends that name them."""

    timeouts: Timeouts = Timeouts()
    retry: Retry = Retry()
    breaker: Breaker = Breaker()
    admission: Admission = Admission()
    max_context: int | None = Field(
        default=None, ge=1, description="Context window; longer requests get a 400"
    )
    fallback: list[Name] = Field(
        default_factory=list,
        description="Pools to try, in order, when this one cannot serve (x-gateway-degraded)",
    )
    scheduling: Scheduling = Scheduling()


class RetryBudget(_Strict):
    """Retries are at most ``ratio`` of requests over ``window_s``, plus a small floor."""

    ratio: float = Field(default=0.1, ge=0, le=1)
    window_s: PositiveSeconds = 10.0
    min_retries_per_s: float = Field(default=0.5, ge=0, le=10_000)


LengthName = Literal["short", "medium", "long"]
PriorityName = Literal["critical", "standard", "sheddable"]


class RuleWhen(_Strict):
    """Conditions of a tier rule; all given ones must hold (none given: always)."""

    length: list[LengthName] | None = None
    difficulty_at_least: float | None = Field(default=None, ge=0, le=1)
    difficulty_below: float | None = Field(default=None, ge=0, le=1)
    priority: list[PriorityName] | None = None
    model: list[Name] | None = Field(default=None, description="Public model names asked for")


class Rule(_Strict):
    """A tier rule for ``route: auto`` models: the first that matches picks the pool."""

    name: Name
    when: RuleWhen = RuleWhen()
    pool: Name


class Routing(_Strict):
    """How ``route: auto`` models choose a pool: tier rules, then the default pool."""

    default_pool: Name | None = None
    rules: list[Rule] = Field(default_factory=list)


VolatileKind = Literal["timestamp", "epoch", "uuid", "request_id"]
_ALL_VOLATILE: tuple[VolatileKind, ...] = ("timestamp", "epoch", "uuid", "request_id")


class PrefixTracking(_Strict):
    """Per-session memory of the last prompt, to explain prefix-cache misses."""

    enabled: bool = True
    max_sessions: int = Field(default=10_000, ge=1, le=10_000_000)
    ttl_s: PositiveSeconds = 1800.0
    max_chars: int = Field(default=32_768, ge=1, le=10_000_000)


class RewritePattern(_Strict):
    """An operator's volatile fragment: moved out of the system prompt like a timestamp."""

    name: Name
    regex: str = Field(min_length=1)
    cause: Literal["timestamp", "id", "other"] = "other"


class Rewrite(_Strict):
    """Prompt canonicalisation so backends' prefix caches hit (x-gateway-rewrite: off skips)."""

    enabled: bool = True
    kinds: list[VolatileKind] = Field(default_factory=lambda: list(_ALL_VOLATILE))
    extra_patterns: list[RewritePattern] = Field(default_factory=list)
    note_placement: Literal["system_suffix", "system_message", "last_user_suffix"] = "system_suffix"
    sort_tools: bool = True
    prefix_tracking: PrefixTracking = PrefixTracking()


class Classify(_Strict):
    """Length classes and the difficulty threshold of the classify stage."""

    medium_from: int = Field(default=512, ge=1, description="Prompt tokens where medium starts")
    long_from: int = Field(default=4096, ge=2, description="Prompt tokens where long starts")
    difficulty_threshold: float = Field(default=0.5, gt=0, lt=1)

    @model_validator(mode="after")
    def _ordered(self) -> Classify:
        if self.medium_from >= self.long_from:
            raise ValueError("medium_from must be below long_from")
        return self


class Health(_Strict):
    """Active health checks of each backend."""

    interval_s: PositiveSeconds = 2.0
    timeout_s: PositiveSeconds = 2.0
    failures_to_eject: int = Field(default=2, ge=1, le=100)
    successes_to_restore: int = Field(default=1, ge=1, le=100)
    scrape_interval_s: PositiveSeconds = Field(
        default=1.0, description="How often vLLM/TGI load metrics are read, for routing"
    )


class Server(_Strict):
    """Limits of the gateway's own HTTP server."""

    max_body_bytes: int = Field(default=4 * 1024 * 1024, ge=1024, le=1024**3)
    max_keepalive_connections: int = Field(
        default=200, ge=0, le=1_000_000, description="Idle connections kept per backend"
    )
    reload_poll_s: PositiveSeconds = 1.0
    drain_timeout_s: int = Field(
        default=30, ge=0, le=3600, description="On SIGTERM, seconds in-flight requests may finish"
    )
    access_log: bool = Field(
        default=True, description="One JSON line per request on the gateway.access logger"
    )


class Tracing(_Strict):
    """OpenTelemetry traces: a span per request, its stages as child spans (off by default)."""

    enabled: bool = False
    otlp_endpoint: str = Field(
        default="http://127.0.0.1:4318/v1/traces", description="OTLP/HTTP traces endpoint"
    )
    service_name: str = Field(default="latency-gateway", min_length=1, max_length=128)
    sample_ratio: float = Field(default=1.0, ge=0, le=1, description="Share of requests traced")
    export_timeout_s: PositiveSeconds = 5.0

    @field_validator("otlp_endpoint")
    @classmethod
    def _http(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value


class Policy(_Strict):
    """The whole routing policy."""

    version: Literal[1] = 1
    backends: list[Backend] = Field(min_length=1)
    models: dict[Name, Model] = Field(min_length=1)
    pools: dict[Name, Pool] = Field(default_factory=dict)
    routing: Routing = Routing()
    classify: Classify = Classify()
    rewrite: Rewrite = Rewrite()
    retry_budget: RetryBudget = RetryBudget()
    health: Health = Health()
    server: Server = Server()
    tracing: Tracing = Tracing()
