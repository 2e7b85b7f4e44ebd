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
    api_key_env: Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")] | None = Field(
        default=None,
        description="Environment variable holding the key sent upstream as a Bearer token",
    )

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


class Admission(_Strict):
    """Gateway-side queueing and shedding for a pool."""

    limit: Limit = Limit()
    max_queue: int = Field(default=1024, ge=0, description="Hard cap, every priority")
    max_queue_long: int = Field(default=128, ge=0, description="Hard cap of the long lane")
    max_wait_s: float = Field(default=30.0, gt=0, description="Shed beyond this estimated wait")
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
    compression: Compression = Compression()
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


LengthName = Literal["short", "medium", "long"]
PriorityName = Literal["critical", "standard", "sheddable"]


class RuleWhen(_Strict):
    """Conditions of a tier rule; all given ones must hold (none given: always)."""

    length: list[LengthName] | None = None
    difficulty_at_least: float | None = Field(default=None, ge=0, le=1)
    difficulty_below: float | None = Field(default=None, ge=0, le=1)
    priority: list[PriorityName] | None = None
    model: list[Name] | None = Field(default=None, description="Public model names asked for")
    tenant: list[Name] | None = Field(default=None, description="Tenants asking")


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


class Knn(_Strict):
    """A kNN vote over embedded, labelled exemplars, blended into the difficulty score."""

    enabled: bool = False
    exemplars: str = Field(
        default="policies/exemplars/difficulty.jsonl",
        description="JSON lines of {prompt, label: easy|hard}; relative to the working directory",
    )
    k: int = Field(default=7, ge=1, le=100)
    weight: float = Field(default=0.3, ge=0, le=1, description="Share of the vote in the score")


class Classify(_Strict):
    """Length classes and the difficulty threshold of the classify stage."""

    medium_from: int = Field(default=512, ge=1, description="Prompt tokens where medium starts")
    long_from: int = Field(default=4096, ge=2, description="Prompt tokens where long starts")
    difficulty_threshold: float = Field(default=0.5, gt=0, lt=1)
    knn: Knn = Knn()

    @model_validator(mode="after")
    def _ordered(self) -> Classify:
        if self.medium_from >= self.long_from:
            raise ValueError("medium_from must be below long_from")
        return self


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
    header_timeout_s: PositiveSeconds = Field(
        default=10.0, description="A connection must send a request's headers within this"
    )
    body_timeout_s: PositiveSeconds = Field(
        default=30.0, description="A request's body must arrive within this (else 408)"
    )
    max_connections: int | None = Field(
        default=1000, ge=1, le=1_000_000, description="Concurrent connections (more get 503)"
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


KeyHash = Annotated[str, Field(pattern=r"^sha256:[0-9a-f]{64}$")]


class RateLimit(_Strict):
    """Token buckets of a tenant: full at the per-minute figure, refilled evenly."""

    requests_per_minute: int | None = Field(default=None, ge=1, le=10_000_000)
    tokens_per_minute: int | None = Field(
        default=None, ge=1, le=10_000_000_000, description="Prompt estimate plus max_tokens"
    )


class Tenant(_Strict):
    """Who may call the gateway: key hashes (`latency-gateway hash-key`), models, limits."""

    keys: list[KeyHash] = Field(min_length=1)
    models: list[Name] | None = Field(default=None, description="Public models (default: all)")
    priority: PriorityName = Field(default="standard", description="When no x-gateway-priority")
    rate_limit: RateLimit = RateLimit()


class Auth(_Strict):
    """Gateway API keys. With tenants, every /v1 request needs a valid key."""

    tenants: dict[Name, Tenant] = Field(default_factory=dict)
    rate_limit_store: Literal["memory", "redis"] = Field(
        default="memory", description="redis: buckets shared by replicas (memory if it fails)"
    )
    redis_url: str | None = Field(default=None, description="e.g. redis://127.0.0.1:6379/0")

    @model_validator(mode="after")
    def _url_for_redis(self) -> Auth:
        if self.rate_limit_store == "redis" and not self.redis_url:
            raise ValueError("rate_limit_store 'redis' needs redis_url")
        return self


class InputLimits(_Strict):
    """Refuse (or clamp) requests beyond these sizes before any other work."""

    max_messages: int | None = Field(default=1024, ge=1)
    max_message_chars: int | None = Field(default=1_000_000, ge=1, description="Per message")
    max_prompt_chars: int | None = Field(default=None, ge=1, description="/v1/completions")
    max_tokens: int | None = Field(default=None, ge=1, description="Cap on max_tokens")
    max_tokens_action: Literal["clamp", "refuse"] = "refuse"
    max_n: int = Field(default=8, ge=1, le=128)


class Admin(_Strict):
    """Protection of /admin/*: loopback clients only, or an admin key from anywhere."""

    mode: Literal["localhost", "key"] = "localhost"
    keys: list[KeyHash] = Field(default_factory=list, description="Admin key hashes (mode: key)")

    @model_validator(mode="after")
    def _keys_for_key_mode(self) -> Admin:
        if self.mode == "key" and not self.keys:
            raise ValueError("mode 'key' needs at least one key hash")
        return self


class Policy(_Strict):
    """The whole routing policy."""

    version: Literal[1] = 1
    backends: list[Backend] = Field(min_length=1)
    models: dict[Name, Model] = Field(min_length=1)
    pools: dict[Name, Pool] = Field(default_factory=dict)
    routing: Routing = Routing()
    classify: Classify = Classify()
    rewrite: Rewrite = Rewrite()
    cache: Cache = Cache()
    retry_budget: RetryBudget = RetryBudget()
    cluster: Cluster = Cluster()
    health: Health = Health()
    server: Server = Server()
    tracing: Tracing = Tracing()
    auth: Auth = Auth()
    limits: InputLimits = InputLimits()
    admin: Admin = Admin()
    log_prompts: bool = Field(default=False, description="Allow prompt text in logs (debug only)")
