"""The plan stage: public model to pool, by a fixed mapping or, for ``route: auto``, by the
request's classification, the policy's tier rules and then its difficulty split
(``classify/split.py``); then the chosen pool's context check.

Tier rules: the first rule whose conditions all hold wins. Conditions (each optional, all
given ones must hold): the request's length class, bounds on its difficulty score, its
priority, the public model it asked for, and its tenant. No rule matching means the
policy's default pool.

Classification (token estimate, length class, difficulty score; ``gateway/classify``) runs
only when something needs it: an auto route, or a pool with ``max_context``. A request that
cannot fit the pool's context window gets a 400 naming its token count and the limit (a pool
with ``compression`` leaves that check to the compression stage, ``compress.py``). A request
to one of vLLM's own routes (tokenize, detokenize, rerank, score) gets a 404 unless a backend
of the pool declares it in ``extra_routes``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gateway.classify import Classification
from gateway.classify.length import length_class
from gateway.errors import NotFound
from gateway.openai.endpoints import UPSTREAM_PATHS
from gateway.openai.messages import prompt_chars
from gateway.path.context import (
    Plan,
    RequestContext,
    classify,
    counted,
    evolve,
    owns_context_check,
    require_fit,
)
from gateway.path.flow import Flow, Services
from gateway.policy.compile import ModelRoute, PoolSpec
from gateway.schema import Rule, RuleWhen


async def plan_stage(flow: Flow, services: Services) -> Flow:
    return evolve(flow, plan=plan_pool(flow.ctx))


def plan_pool(ctx: RequestContext) -> Plan:
    route = _route(ctx)
    count: tuple[int, bool] | None
    if route.auto:
        classes = classify(ctx)
        plan = _auto_plan(ctx, classes)  # it carries the length class and the token count
        count = classes.prompt_tokens, classes.tokens_exact
    else:
        plan = _fixed_plan(ctx, route)
        # A named model needs no difficulty: the count alone, for the context check.
        count = counted(ctx) if ctx.policy.checks_context else None
    _require_route(ctx, plan.pool)
    lengths = ctx.policy.classify.length
    if count is None:
        # Only a metrics label here: the admission estimate (four characters a token) will do.
        rough = int(prompt_chars(ctx.request.body) / 4)
        return evolve(plan, length=length_class(rough, lengths).value)
    tokens, exact = count
    if not owns_context_check(ctx, plan.pool):
        require_fit(ctx, plan.pool, tokens, estimated=not exact)
    if route.auto:
        return plan
    return evolve(plan, length=length_class(tokens, lengths).value, prompt_tokens=tokens)


def _route(ctx: RequestContext) -> ModelRoute:
    route = ctx.policy.models.get(ctx.request.model)
    if route is None:
        available = ", ".join(ctx.policy.model_names())
        raise NotFound(
            f"The model '{ctx.request.model}' does not exist. Available models: {available}.",
            param="model",
            code="model_not_found",
        )
    return route


def _require_route(ctx: RequestContext, pool: PoolSpec) -> None:
    endpoint = ctx.request.endpoint
    if not pool.serves(endpoint):
        raise NotFound(
            f"No backend of pool '{pool.name}' (model '{ctx.request.model}') serves "
            f"{UPSTREAM_PATHS[endpoint]}; a backend that does lists '{endpoint}' in its "
            "extra_routes.",
            param="model",
            code="route_not_served",
        )


def _fixed_plan(ctx: RequestContext, route: ModelRoute) -> Plan:
    assert route.pool is not None
    return Plan(ctx.policy.pools[route.pool], f"model:{route.public_name}")


def _auto_plan(ctx: RequestContext, classes: Classification | None) -> Plan:
    assert classes is not None
    policy = ctx.policy
    rules = policy.source.routing.rules
    rule = None
    if rules:  # the facts are gathered only for rules to match
        facts = Facts(
            length=classes.length.value,
            difficulty=classes.difficulty.score,
            priority=ctx.priority.name.lower(),
            model=ctx.request.model,
            tenant=ctx.tenant,
        )
        rule = first_match(rules, facts)
    split, score = policy.auto_split, classes.difficulty.score
    # The plan carries the length class and the token count (``plan_pool`` adds nothing).
    length, tokens = classes.length.value, classes.prompt_tokens
    if rule is None and split is not None:
        large = split.pool(score) == split.large
        return Plan(
            policy.pools[split.pool(score)],
            f"{split.reason(score)};{classes.reason()}",
            length,
            tokens,
            difficulty_margin=score - split.threshold if large else None,
        )
    if rule is None:
        reason = f"auto:default;{classes.reason()}"
        return Plan(policy.pools[policy.default_pool], reason, length, tokens)
    bound = rule.when.difficulty_at_least
    margin = None if bound is None else classes.difficulty.score - bound
    return Plan(
        policy.pools[rule.pool],
        f"rule:{rule.name};{classes.reason()}",
        length,
        tokens,
        difficulty_margin=margin,
    )


@dataclass(frozen=True, slots=True)
class Facts:
    length: str
    difficulty: float
    priority: str
    model: str
    tenant: str | None = None


def matches(when: RuleWhen, facts: Facts) -> bool:
    if when.length is not None and facts.length not in when.length:
        return False
    if when.difficulty_at_least is not None and facts.difficulty < when.difficulty_at_least:
        return False
    if when.difficulty_below is not None and facts.difficulty >= when.difficulty_below:
        return False
    if when.priority is not None and facts.priority not in when.priority:
        return False
    if when.tenant is not None and facts.tenant not in when.tenant:
        return False
    return when.model is None or facts.model in when.model


def first_match(rules: Sequence[Rule], facts: Facts) -> Rule | None:
    return next((rule for rule in rules if matches(rule.when, facts)), None)
