"""A request against a pool's context window: the one check planning, compression and every
move to another pool (degrade, fallback) make.

``fit`` is the verdict (None when the pool has no ``max_context``); ``require_fit`` turns a
miss into the 400 that names the token count and the limit; ``fits_pool`` asks it for a
pool planning did not choose, with the plan's count (after compression, if any).
"""

from __future__ import annotations

from gateway.classify import ContextFit, check_context, requested_max_tokens
from gateway.errors import InvalidRequest
from gateway.path.context import Plan, RequestContext
from gateway.policy.compile import PoolSpec


def fit(
    ctx: RequestContext, pool: PoolSpec, prompt_tokens: int, *, estimated: bool = True
) -> ContextFit | None:
    limit = pool.settings.max_context
    if limit is None:
        return None
    max_tokens = requested_max_tokens(ctx.request.body)
    return check_context(prompt_tokens, max_tokens, limit, prompt_estimated=estimated)


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
