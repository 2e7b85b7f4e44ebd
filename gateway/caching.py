"""The cache stage of the request path: after canonicalisation, before planning and admission.

A hit is answered here (no admission slot, no backend): the stored answer with a fresh id,
as JSON or replayed as an event stream. A miss returns the capture that stores the answer
once the proxy has relayed it whole. Every response says ``x-gateway-cache``: ``miss``,
``exact``, ``semantic`` or ``bypass`` (cache off, request not deterministic, or the client's
``x-gateway-cache: bypass``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from starlette.responses import Response

from gateway.cache.capture import AnswerCapture
from gateway.cache.replay import fresh_answer, replay_stream, stream_events
from gateway.cache.service import Lookup
from gateway.disconnect import DisconnectWatch
from gateway.pipeline import RequestContext
from gateway.planning import classify
from gateway.responses import json_response
from gateway.runtime import Gateway
from gateway.streaming import EventStreamResponse


@dataclass(frozen=True, slots=True)
class Cached:
    response: Response | None = None  # a hit, answered
    capture: AnswerCapture | None = None  # a miss whose answer is to be stored


async def cache_stage(
    gateway: Gateway, ctx: RequestContext, headers: dict[str, str], watch: DisconnectWatch
) -> Cached:
    cache = gateway.caches.cache
    request = ctx.request
    route = ctx.policy.models.get(request.model)
    if cache is None or route is None:  # an unknown model is refused by the plan stage
        headers["x-gateway-cache"] = "bypass"
        return Cached()
    started = gateway.clock()
    # The route is part of the scope: a reload that points the model elsewhere starts afresh.
    model = f"{request.model}@{route.pool or 'auto'}"
    lookup = await cache.lookup(request.endpoint, model, request.body, ctx.headers)
    gateway.metrics.cache_lookup_seconds.observe(gateway.clock() - started)
    gateway.metrics.cache_lookups.labels(lookup.status).inc()
    headers["x-gateway-cache"] = lookup.status
    if lookup.entry is None:
        return Cached(capture=cache.capture(lookup, request.endpoint))
    return Cached(response=_answer(ctx, lookup, headers, watch))


def _answer(
    ctx: RequestContext, lookup: Lookup, headers: dict[str, str], watch: DisconnectWatch
) -> Response:
    assert lookup.entry is not None
    stored = lookup.entry.answer
    if lookup.similarity is not None:
        headers["x-gateway-cache-similarity"] = f"{lookup.similarity:.3f}"
    answer = fresh_answer(
        stored, model=ctx.request.model, created=int(time.time()), prompt_tokens=_prompt(ctx)
    )
    if not ctx.request.stream:
        return json_response(answer, headers=headers)
    options = ctx.request.body.get("stream_options")
    usage = isinstance(options, dict) and bool(options.get("include_usage"))
    events = stream_events(answer, include_usage=usage)
    return EventStreamResponse(replay_stream(events), watch, headers)


def _prompt(ctx: RequestContext) -> int:
    # This request's own prompt: a semantic hit was asked in other words.
    return classify(ctx).prompt_tokens
