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
    Recovery,
    Retry,
    RetryBudget,
    Scheduling,
    ScorerWeights,
    Summary,
    Timeouts,
)
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
