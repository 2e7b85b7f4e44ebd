"""The request's facts (``RequestContext``, fixed at identification), its ``Plan`` (the
pool chosen by the plan stage, moved by compression, degrade or fallback), and the one check
of a request against a pool's context window that planning, compression and every move to
another pool (degrade, fallback) make: ``fit`` is the verdict (None when the pool has no
``max_context``); ``require_fit`` turns a miss into the 400 that names the token count and
the limit; ``fits_pool`` asks it for a pool planning did not choose, with the plan's count
(after compression, if any). ``evolve`` is ``dataclasses.replace`` for these frozen records at
half its cost (the stages make several copies per request)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from gateway.admission.queue import Priority
from gateway.classify import (
    Classification,
    ContextFit,
    check_context,
    classify_chat,
    classify_completion,
    count_tokens,
    requested_max_tokens,
    with_model,
)
from gateway.classify.knn import blend_vote
from gateway.embedding import Vectors
from gateway.errors import InvalidRequest
from gateway.openai.messages import Message, responses_messages
from gateway.openai.request import ParsedRequest
from gateway.policy.compile import CompiledPolicy, PoolSpec
from gateway.tracing.marks import StageMarks

T = TypeVar("T")


def evolve(record: T, **changes: Any) -> T:
    """``dataclasses.replace(record, **changes)`` for a frozen, slotted dataclass: the fields
    copied into a new object as its ``__init__`` would set them, without the call through it
    (``replace`` builds the keyword arguments of every field for it). Its slots are its fields;
    when they are not all positional ``__init__`` fields (``__match_args__``), or the class has
    a ``__post_init__``, it goes through ``replace``; so does a name that is no field (which
    raises ``TypeError`` there)."""
    cls = type(record)
    names: tuple[str, ...] | None = getattr(cls, "__slots__", None)
    if (
        names is None
        or getattr(cls, "__match_args__", None) != names
        or hasattr(cls, "__post_init__")
        or not cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
        or len(changes.keys() & names) != len(changes)
    ):
        return replace(record, **changes)  # type: ignore[type-var]
    new = object.__new__(cls)
    put = object.__setattr__
    for name in names:
        put(new, name, changes[name] if name in changes else getattr(record, name))
    return new


@dataclass(frozen=True, slots=True)
class RequestContext:
    """Facts about one request, fixed at arrival."""

    request_id: str
    arrival: float
    request: ParsedRequest
    policy: CompiledPolicy
    headers: Mapping[str, str]
    priority: Priority = Priority.STANDARD  # from x-gateway-priority
    marks: StageMarks = field(default_factory=StageMarks)  # when each stage ended
    tenant: str | None = None  # from the gateway API key, when the policy has tenants
    cache: str | None = None  # the cache stage's result (x-gateway-cache)
    difficulty_vote: float | None = None  # kNN vote over exemplars (classify.knn), if on
    query_vector: Vectors | None = None  # the question's embedding, for the learned model
    deadline: float | None = None  # from x-gateway-deadline-ms, on the clock of ``arrival``
    embed_s: float = 0.0  # seconds waited for the question's embedding (cache, kNN vote)


@dataclass(frozen=True, slots=True)
class Plan:
    pool: PoolSpec
    reason: str
    length: str = "unknown"  # the prompt's length class, a metrics label
    prompt_tokens: int | None = None  # the plan stage's estimate, when it classified
    # How far the difficulty score lay above the boundary that chose this pool (auto routes
    # decided by difficulty): a small margin makes the smaller pool a fair substitute.
    difficulty_margin: float | None = None


def fit(
    ctx: RequestContext, pool: PoolSpec, prompt_tokens: int, *, estimated: bool = True
) -> ContextFit | None:
    limit = pool.settings.max_context
    if limit is None:
        return None
    max_tokens = requested_max_tokens(ctx.request.body)
    return check_context(prompt_tokens, max_tokens, limit, prompt_estimated=estimated)


def counted(ctx: RequestContext) -> tuple[int, bool]:
    """The prompt tokens ``classify`` counts, and whether exactly, without its difficulty."""
    return count_tokens(*_asked(ctx))


def _asked(ctx: RequestContext) -> tuple[Sequence[Message] | None, object]:
    """The request's messages (chat, responses), else its prompt (embeddings: the input)."""
    body, endpoint = ctx.request.body, ctx.request.endpoint
    if endpoint in ("chat", "responses"):
        return (body["messages"] if endpoint == "chat" else responses_messages(body)), None
    return None, body.get("prompt", body.get("input"))


def require_fit(
    ctx: RequestContext, pool: PoolSpec, prompt_tokens: int, *, estimated: bool = True
) -> None:
    found = fit(ctx, pool, prompt_tokens, estimated=estimated)
    if found is not None and not found.fits:
        raise InvalidRequest(found.message(), param="messages", code="context_length_exceeded")


def fits_pool(ctx: RequestContext, plan: Plan, pool: PoolSpec) -> bool:
    """Whether the request as planned fits ``pool``, so that it is not sent where the backend
    must refuse it. True when the pool has no limit or nothing counted the request (no pool
    of the policy has a limit)."""
    if plan.prompt_tokens is None:
        return True
    found = fit(ctx, pool, plan.prompt_tokens)
    return found is None or found.fits


def owns_context_check(ctx: RequestContext, pool: PoolSpec) -> bool:
    """True when this stage, not planning, checks the request against the pool's context."""
    return ctx.request.endpoint == "chat" and pool.settings.compression.enabled


def classify(ctx: RequestContext) -> Classification:
    config = ctx.policy.classify
    max_tokens = requested_max_tokens(ctx.request.body)
    messages, prompt = _asked(ctx)
    if messages is not None:
        classes = classify_chat(
            messages, max_tokens=max_tokens, config=config, vector=ctx.query_vector
        )
    else:
        classes = classify_completion(
            prompt, max_tokens=max_tokens, config=config, vector=ctx.query_vector
        )
    if config.model is not None:  # the learned model ranks the score (no kNN blend)
        return with_model(classes, config, ctx.query_vector)
    if ctx.difficulty_vote is None:
        return classes
    weight = ctx.policy.source.classify.knn.weight
    return blend_vote(classes, ctx.difficulty_vote, weight, config.weights.threshold)
