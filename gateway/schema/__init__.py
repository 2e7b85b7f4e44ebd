"""The policy file's schema: pydantic models that refuse unknown keys.

This is the first of two steps. It checks each field on its own (types, ranges, enums); the
compile step (``compile.py``) checks what fields say about each other. One module per
section (``backends``, ``pools``, ``routing``, ``rewrite``, ``cache``, ``server``, ``auth``);
this one holds the whole ``Policy`` and re-exports every section's models.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gateway.schema.auth_settings import Auth, KeyHash, RateLimit, Tenant
from gateway.schema.backend_settings import (
    Backend,
    BackendTls,
    ContinueWith,
    Discover,
    Engine,
    Health,
    Model,
)
from gateway.schema.cache_settings import Cache, CacheRedis, CacheVerify, SemanticCache
from gateway.schema.pool_settings import (
    Admission,
    Breaker,
    Cluster,
    Compression,
    LadderStep,
    Limit,
    Objective,
    Pool,
    Retry,
    RetryBudget,
    Summary,
    Timeouts,
)
from gateway.schema.replica_settings import Recovery, Scheduling, ScorerWeights
from gateway.schema.rewrite_settings import PrefixTracking, Rewrite, RewritePattern, VolatileKind
from gateway.schema.routing_settings import (
    AutoSplit,
    Classify,
    DifficultyModelSettings,
    Knn,
    LengthName,
    PriorityName,
    Routing,
    Rule,
    RuleWhen,
)
from gateway.schema.server_settings import Admin, InputLimits, Server, Tracing
from gateway.schema.strict import Name, PositiveSeconds, _Strict


class Policy(_Strict):
    """The whole routing policy."""

    version: Literal[1] = Field(
        default=1, description="Version of the policy format; 1 is the only one"
    )
    backends: list[Backend] = Field(
        description="One entry per replica (or per DNS name whose addresses are the replicas); "
        "at least one",
        min_length=1,
    )
    models: dict[Name, Model] = Field(
        description="The public names clients send in `model`, each pinned to a pool or routed "
        "by the gateway",
        min_length=1,
    )
    pools: dict[Name, Pool] = Field(
        description="Per-pool settings; a pool exists because backends name it, and an unlisted "
        "pool takes every default",
        default_factory=dict,
    )
    routing: Routing = Field(
        default=Routing(),
        description="How `route: auto` models choose a pool: tier rules, then the difficulty "
        "split, then the default pool",
    )
    classify: Classify = Field(
        default=Classify(),
        description="How a request's length class and difficulty score are computed",
    )
    rewrite: Rewrite = Field(
        default=Rewrite(),
        description="Canonicalisation of system prompts for backend prefix caches, and opt-in "
        "transforms",
    )
    cache: Cache = Field(
        default=Cache(), description="The response cache (exact and semantic); off by default"
    )
    retry_budget: RetryBudget = Field(
        default=RetryBudget(),
        description="Retries and fallbacks across all pools, as a share of requests",
    )
    cluster: Cluster = Field(
        default=Cluster(), description="Replicas share each pool's concurrency limit through Redis"
    )
    health: Health = Field(
        default=Health(), description="Active health checks and load scraping of the backends"
    )
    server: Server = Field(default=Server(), description="Limits of the gateway's own HTTP server")
    tracing: Tracing = Field(
        default=Tracing(), description="OpenTelemetry traces over OTLP/HTTP (off by default)"
    )
    auth: Auth = Field(
        default=Auth(),
        description="Tenants, their keys, models and rate limits; no tenants means no key is asked",
    )
    limits: InputLimits = Field(
        default=InputLimits(), description="Input limits, each refused with its own 400"
    )
    admin: Admin = Field(
        default=Admin(),
        description="Who may call /admin/* (and, if listed, /metrics, /openapi.json, the "
        "dashboard)",
    )
    log_prompts: bool = Field(default=False, description="Allow prompt text in logs (debug only)")


__all__ = [
    "Admin",
    "Admission",
    "Auth",
    "AutoSplit",
    "Backend",
    "BackendTls",
    "Breaker",
    "Cache",
    "CacheRedis",
    "CacheVerify",
    "Classify",
    "Cluster",
    "Compression",
    "ContinueWith",
    "DifficultyModelSettings",
    "Discover",
    "Engine",
    "Health",
    "InputLimits",
    "KeyHash",
    "Knn",
    "LadderStep",
    "LengthName",
    "Limit",
    "Model",
    "Name",
    "Objective",
    "Policy",
    "Pool",
    "PositiveSeconds",
    "PrefixTracking",
    "PriorityName",
    "RateLimit",
    "Recovery",
    "Retry",
    "RetryBudget",
    "Rewrite",
    "RewritePattern",
    "Routing",
    "Rule",
    "RuleWhen",
    "Scheduling",
    "ScorerWeights",
    "SemanticCache",
    "Server",
    "Summary",
    "Tenant",
    "Timeouts",
    "Tracing",
    "VolatileKind",
]
