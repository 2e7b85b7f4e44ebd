"""The plan stage: public model to pool, by a fixed mapping or, for ``route: auto``, by the
request's classification, the policy's tier rules and then its difficulty split
(``classify/split.py``); then the chosen pool's context check.

Classification (token estimate, length class, difficulty score; ``gateway/classify``) runs
only when something needs it: an auto route, or a pool with ``max_context``. A request that
cannot fit the pool's context window gets a 400 naming its token count and the limit (a pool
with ``compression`` leaves that check to the compression stage, ``compressing.py``).
"""

from __future__ import annotations

from dataclasses import replace

from gateway.classify import Classification, classify_chat, classify_completion, with_model
from gateway.classify.knn import blend_vote
from gateway.classify.length import length_class
from gateway.classify.messages import requested_max_tokens
from gateway.compressing import owns_context_check
from gateway.context_window import require_fit
from gateway.errors import NotFound
from gateway.pipeline import Plan, RequestContext
from gateway.policy.compile import ModelRoute
from gateway.request_facts import prompt_chars
from gateway.tiering import Facts, first_match


def plan_pool(ctx: RequestContext) -> Plan:
    route = _route(ctx)
    classes = classify(ctx) if route.auto or ctx.policy.checks_context else None
    plan = _auto_plan(ctx, classes) if route.auto else _fixed_plan(ctx, route)
    if classes is None:
        # Only a metrics label here: the admission estimate (four characters a token) will do.
        rough = int(prompt_chars(ctx.request.body) / 4)
        return replace(plan, length=length_class(rough, ctx.policy.classify.length).value)
    if not owns_context_check(ctx, plan.pool):
        require_fit(ctx, plan.pool, classes.prompt_tokens, estimated=not classes.tokens_exact)
    return replace(plan, length=classes.length.value, prompt_tokens=classes.prompt_tokens)


def classify(ctx: RequestContext) -> Classification:
    body = ctx.request.body
    config = ctx.policy.classify
    max_tokens = requested_max_tokens(body)
    if ctx.request.endpoint == "chat":
        classes = classify_chat(body["messages"], max_tokens=max_tokens, config=config)
    else:
        classes = classify_completion(body.get("prompt"), max_tokens=max_tokens, config=config)
    if config.model is not None:  # the learned model ranks the score (no kNN blend)
        return with_model(classes, config, ctx.query_vector)
    if ctx.difficulty_vote is None:
        return classes
    weight = ctx.policy.source.classify.knn.weight
    return blend_vote(classes, ctx.difficulty_vote, weight, config.weights.threshold)


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


def _fixed_plan(ctx: RequestContext, route: ModelRoute) -> Plan:
    assert route.pool is not None
    return Plan(ctx.policy.pools[route.pool], f"model:{route.public_name}")


def _auto_plan(ctx: RequestContext, classes: Classification | None) -> Plan:
    assert classes is not None
    policy = ctx.policy
    facts = Facts(
        length=classes.length.value,
        difficulty=classes.difficulty.score,
        priority=ctx.priority.name.lower(),
        model=ctx.request.model,
        tenant=ctx.tenant,
    )
    rule = first_match(policy.source.routing.rules, facts)
    split, score = policy.auto_split, classes.difficulty.score
    if rule is None and split is not None:
        return Plan(policy.pools[split.pool(score)], f"{split.reason(score)};{classes.reason()}")
    if rule is None:
        return Plan(policy.pools[policy.default_pool], f"auto:default;{classes.reason()}")
    return Plan(policy.pools[rule.pool], f"rule:{rule.name};{classes.reason()}")
