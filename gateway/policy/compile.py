"""Compile a validated policy: check cross-references and build immutable lookup tables.

Backends that discover their replicas (``discover``) are first expanded into the replicas
found so far (``discovered.py``). Checks: backend names and URLs are unique, every model
names a known pool, every declared pool has backends, fallback and degrade pools exist,
compression has a budget and its summary pool exists, tier rules name known pools and
models, the routing default pool exists, the difficulty model's file loads and the
difficulty split's pools are known (``difficulty_routing.py``), and the features it turns on
are installed (``extras.py``). The result is hashed (SHA-256 of the canonical JSON of the
validated policy, replicas found included) so the running
policy can be identified.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import InitVar, dataclass, field, replace
from types import MappingProxyType

import orjson

from gateway.classify import ClassifyConfig, DifficultyWeights, LengthThresholds
from gateway.classify.split import DifficultySplit
from gateway.classify.vector_use import VectorUse
from gateway.openai.request import PASS_THROUGH
from gateway.policy.backend_origins import backend_origins
from gateway.policy.difficulty_routing import DifficultyRouting, difficulty_routing
from gateway.policy.discovered import Found, expand
from gateway.policy.extras import extra_problems
from gateway.rewrite import (
    ExtraPattern,
    NotePlacement,
    RewriteConfig,
    RewriteConfigError,
    Transform,
)
from gateway.schema import Backend, Engine, Policy, Pool, Timeouts
from gateway.schema.problems import FieldProblem, PolicyError
from gateway.schema.suggest import did_you_mean
from gateway.security.api_keys import KeyRing
from gateway.security.redact import Redactor, url_passwords
from gateway.security.secrets import UpstreamSecret, secret_from_env
from gateway.security.tenants import auth_problems, build_admin_keys, build_tenant_keys
from gateway.upstream.origin import Origin

# In flight at once, for a replica or pool the policy puts no cap on.
UNBOUNDED = 100_000


@dataclass(frozen=True, slots=True)
class BackendSpec:
    name: str
    url: str
    engine: Engine
    served_model: str
    pool: str
    max_inflight: int | None  # the policy's hard cap; None: no cap of the gateway's own
    api_key: UpstreamSecret | None = field(default=None, repr=False)
    extra_routes: frozenset[str] = frozenset()  # vLLM routes it serves (tokenize, ...)
    # How a stream it cut short is continued elsewhere: none | continue_final_message |
    # assistant_prefill (the policy's ``continue_with``, "auto" resolved by its engine).
    continue_with: str = "none"
    # Found by a DNS name (``discover``): no traffic until a health probe passed.
    discovered: bool = False
    # Where and how to connect (TLS, proxy), shared by requests and probes; parsed from
    # ``url`` alone when not given.
    origin: Origin = field(init=False, repr=False, compare=False)
    via: InitVar[Origin | None] = None

    def __post_init__(self, via: Origin | None) -> None:
        object.__setattr__(self, "origin", via if via is not None else Origin.from_url(self.url))

    @property
    def hard_cap(self) -> int:
        """The most it may be sent at once by the policy (``UNBOUNDED`` without a cap)."""
        return UNBOUNDED if self.max_inflight is None else self.max_inflight

    def serves(self, endpoint: str) -> bool:
        """Whether requests of ``endpoint`` may come here (vLLM's own routes: if declared)."""
        return endpoint not in PASS_THROUGH or endpoint in self.extra_routes


@dataclass(frozen=True, slots=True)
class PoolSpec:
    name: str
    backends: tuple[BackendSpec, ...]
    settings: Pool

    @property
    def timeouts(self) -> Timeouts:
        return self.settings.timeouts

    @property
    def capacity(self) -> int:
        return min(UNBOUNDED, sum(b.hard_cap for b in self.backends))

    def serves(self, endpoint: str) -> bool:
        return any(b.serves(endpoint) for b in self.backends)


@dataclass(frozen=True, slots=True)
class ModelRoute:
    """Where a public model name goes: a fixed pool, or the gateway's choice."""

    public_name: str
    pool: str | None
    auto: bool


@dataclass(frozen=True)
class CompiledPolicy:
    source: Policy
    pools: Mapping[str, PoolSpec]
    models: Mapping[str, ModelRoute]
    default_pool: str
    digest: str
    classify: ClassifyConfig
    rewrite: RewriteConfig
    checks_context: bool  # some pool has max_context, so every request is counted
    auto_split: DifficultySplit | None = None  # route: auto by difficulty (routing.auto)
    keys: KeyRing = field(default_factory=KeyRing.empty)  # gateway API keys -> tenant names
    admin_keys: KeyRing = field(default_factory=KeyRing.empty)
    # Its secret values (upstream keys, URL passwords), kept out of answers, errors and logs.
    redactor: Redactor = field(default_factory=Redactor)
    # The replicas found for the backends that discover theirs, as compiled in.
    found: Found = field(default_factory=lambda: MappingProxyType({}))

    @property
    def backends(self) -> tuple[BackendSpec, ...]:
        return tuple(b for pool in self.pools.values() for b in pool.backends)

    def model_names(self) -> list[str]:
        return sorted(self.models)


def compile_policy(
    declared: Policy,
    *,
    source: str = "<policy>",
    env: Mapping[str, str] | None = None,
    found: Found | None = None,
) -> CompiledPolicy:
    """``env`` (default ``os.environ``) holds the upstream keys the backends name; ``found``
    the replicas discovered so far for the entries that discover theirs
    (``discovered.expand``). The compiled policy's ``source`` is the policy as declared."""
    env = os.environ if env is None else env
    found = MappingProxyType(dict(found or {}))
    policy, discovered = expand(declared, found)
    problems = _cross_reference_problems(policy)
    problems += auth_problems(policy)
    secrets = _upstream_secrets(policy, env, problems)
    origins = backend_origins(policy, env, problems)
    rewrite = _rewrite_config(policy, problems)
    default_pool = policy.routing.default_pool or policy.backends[0].pool
    difficulty = difficulty_routing(policy, default_pool, problems)
    embeds = difficulty.vector_use is VectorUse.EMBED
    # Features whose packages this install lacks.
    problems += extra_problems(policy, routing_embeds=embeds)
    if problems or rewrite is None:
        raise PolicyError(source, problems)
    pools = _build_pools(policy, secrets, origins, discovered)
    models = {
        name: ModelRoute(public_name=name, pool=m.pool, auto=m.route == "auto")
        for name, m in policy.models.items()
    }
    return CompiledPolicy(
        source=declared,
        found=found,
        pools=MappingProxyType(pools),
        models=MappingProxyType(models),
        default_pool=default_pool,
        digest=policy_digest(policy),  # the expanded one: new replicas, new digest
        classify=_classify_config(policy, difficulty),
        auto_split=difficulty.split,
        rewrite=rewrite,
        checks_context=any(p.max_context is not None for p in policy.pools.values()),
        keys=build_tenant_keys(policy),
        admin_keys=build_admin_keys(policy),
        redactor=Redactor(
            [s.reveal() for s in secrets.values()] + url_passwords(policy.model_dump(mode="json"))
        ),
    )


def _upstream_secrets(
    policy: Policy, env: Mapping[str, str], problems: list[FieldProblem]
) -> dict[str, UpstreamSecret]:
    secrets: dict[str, UpstreamSecret] = {}
    for i, b in enumerate(policy.backends):
        if b.api_key_env is None:
            continue
        secret = secret_from_env(b.api_key_env, env, b.api_key_header)
        if secret is None:
            # Name the variable, never a value.
            problems.append(
                FieldProblem(
                    f"backends[{i}].api_key_env",
                    f"environment variable {b.api_key_env} is unset, empty or multi-line",
                )
            )
        else:
            secrets[b.name] = secret
    return secrets


def _rewrite_config(policy: Policy, problems: list[FieldProblem]) -> RewriteConfig | None:
    settings = policy.rewrite
    try:
        return RewriteConfig(
            kinds=frozenset(settings.kinds),
            extra_patterns=tuple(
                ExtraPattern(p.name, p.regex, p.cause) for p in settings.extra_patterns
            ),
            note_placement=NotePlacement(settings.note_placement),
            transforms=frozenset(Transform(name) for name in settings.transforms),
        )
    except RewriteConfigError as exc:
        problems.append(FieldProblem("rewrite", str(exc)))
        return None


def _classify_config(policy: Policy, difficulty: DifficultyRouting) -> ClassifyConfig:
    settings = policy.classify
    return ClassifyConfig(
        length=LengthThresholds(medium_from=settings.medium_from, long_from=settings.long_from),
        weights=replace(DifficultyWeights(), threshold=settings.difficulty_threshold),
        model=difficulty.model,
        vector_use=difficulty.vector_use,
    )


# What "continue_with: auto" means for each engine.
_CONTINUES = {Engine.VLLM: "continue_final_message", Engine.LLAMACPP: "assistant_prefill"}


def _continue_with(backend: Backend) -> str:
    if backend.continue_with != "auto":
        return backend.continue_with
    return _CONTINUES.get(backend.engine, "none")


def policy_digest(policy: Policy) -> str:
    canonical = orjson.dumps(policy.model_dump(mode="json"), option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(canonical).hexdigest()


def _build_pools(
    policy: Policy,
    secrets: Mapping[str, UpstreamSecret],
    origins: Mapping[str, Origin],
    discovered: frozenset[str],
) -> dict[str, PoolSpec]:
    members: dict[str, list[BackendSpec]] = {}
    for b in policy.backends:
        spec = BackendSpec(
            b.name,
            b.address,
            b.engine,
            b.model,
            b.pool,
            b.max_inflight,
            secrets.get(b.name),
            frozenset(b.extra_routes),
            _continue_with(b),
            discovered=b.name in discovered,
            via=origins[b.name],
        )
        members.setdefault(b.pool, []).append(spec)
    return {
        name: PoolSpec(
            name=name,
            backends=tuple(backends),
            settings=policy.pools.get(name, Pool()),
        )
        for name, backends in members.items()
    }


def _cross_reference_problems(policy: Policy) -> list[FieldProblem]:
    problems: list[FieldProblem] = []
    problems += _duplicates(policy, "name")
    problems += _duplicates(policy, "url")
    pools_with_backends = {b.pool for b in policy.backends}
    known = sorted(pools_with_backends)
    for name, model in policy.models.items():
        if model.pool is not None and model.pool not in pools_with_backends:
            problems.append(FieldProblem(f"models.{name}.pool", _unknown_pool(model.pool, known)))
    for name, pool in policy.pools.items():
        if name not in pools_with_backends:
            hint = did_you_mean(name, known)
            problems.append(FieldProblem(f"pools.{name}", f"pool has no backends{hint}"))
        for i, other in enumerate(pool.fallback):
            where = f"pools.{name}.fallback[{i}]"
            if other == name:
                problems.append(FieldProblem(where, "a pool cannot fall back to itself"))
            elif other not in pools_with_backends:
                problems.append(FieldProblem(where, _unknown_pool(other, known)))
        degrade = pool.admission.degrade_to
        if degrade is not None and (degrade == name or degrade not in pools_with_backends):
            problems.append(
                FieldProblem(
                    f"pools.{name}.admission.degrade_to",
                    f"must name another pool (known: {known})",
                )
            )
        if len(set(pool.fallback)) != len(pool.fallback):
            problems.append(FieldProblem(f"pools.{name}.fallback", "a pool is listed twice"))
        problems += _compression_problems(name, pool, policy.pools, pools_with_backends)
    rule_names: set[str] = set()
    for i, rule in enumerate(policy.routing.rules):
        if rule.pool not in pools_with_backends:
            problems.append(
                FieldProblem(f"routing.rules[{i}].pool", _unknown_pool(rule.pool, known))
            )
        if rule.name in rule_names:
            problems.append(FieldProblem(f"routing.rules[{i}].name", "duplicate rule name"))
        rule_names.add(rule.name)
        for asked in rule.when.model or ():
            if asked not in policy.models:
                problems.append(
                    FieldProblem(
                        f"routing.rules[{i}].when.model",
                        f"unknown model {asked!r}{did_you_mean(asked, policy.models)}",
                    )
                )
        for tenant in rule.when.tenant or ():
            if tenant not in policy.auth.tenants:
                problems.append(
                    FieldProblem(f"routing.rules[{i}].when.tenant", f"unknown tenant {tenant!r}")
                )
    default = policy.routing.default_pool
    if default is not None and default not in pools_with_backends:
        problems.append(FieldProblem("routing.default_pool", _unknown_pool(default, known)))
    return problems


def _unknown_pool(name: str, known: list[str]) -> str:
    return f"unknown pool {name!r}{did_you_mean(name, known)} (known: {known})"


def _compression_problems(
    name: str, pool: Pool, pools: Mapping[str, Pool], known: set[str]
) -> list[FieldProblem]:
    settings, where = pool.compression, f"pools.{name}.compression"
    problems = []
    if settings.enabled and settings.budget_tokens is None and pool.max_context is None:
        problems.append(FieldProblem(where, "needs budget_tokens or the pool's max_context"))
    budget, limit = settings.budget_tokens, pool.max_context
    if budget is not None and limit is not None and budget >= limit:
        problems.append(FieldProblem(f"{where}.budget_tokens", "must be below max_context"))
    summary = settings.summary
    if summary.enabled and (summary.pool is None or summary.pool not in known):
        problems.append(
            FieldProblem(f"{where}.summary.pool", f"must name a pool (known: {sorted(known)})")
        )
    writer = pools.get(summary.pool or "")
    window = writer.max_context if writer is not None else None
    if (
        summary.enabled
        and window is not None
        and summary.max_input_tokens + summary.max_tokens > window
    ):
        problems.append(
            FieldProblem(
                f"{where}.summary.max_input_tokens",
                f"with max_tokens must fit pool {summary.pool!r}'s max_context ({window})",
            )
        )
    return problems


def _duplicates(policy: Policy, attr: str) -> list[FieldProblem]:
    seen: dict[str, int] = {}
    problems: list[FieldProblem] = []
    for i, backend in enumerate(policy.backends):
        value = getattr(backend, attr)
        if value in seen:
            problems.append(
                FieldProblem(
                    f"backends[{i}].{attr}",
                    f"duplicate {attr} {value!r} (also backends[{seen[value]}])",
                )
            )
        else:
            seen[value] = i
    return problems
