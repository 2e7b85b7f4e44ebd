"""The cache stage of the request path: after canonicalisation, before planning and admission.

A hit is answered here (no admission slot, no backend): the stored answer with a fresh id, as
JSON or replayed as an event stream. A miss returns the capture that stores the answer once the
proxy has relayed it whole. Every response says ``x-gateway-cache``: ``miss``, ``exact``,
``semantic`` or ``bypass`` (cache off, request not deterministic, or the client's
``x-gateway-cache: bypass``; every endpoint but chat and completions). With
``cache.semantic.verify.sample`` set, a share of semantic hits is also asked of the backend in
the background (``Services.verify_hit``: ``runtime/own_requests.py``). When the learned
difficulty model reads embeddings (``VectorUse.EMBED``: ``classify.model.embedding: true``) or
``classify.knn`` is on, an auto-routed request also gets here the embedding the model reads
(and its kNN vote), the same vector the cache lookup made when it made one: one embedding per
request. By default (the text model) no embedding is made for routing.

A hit counts as a finished request like any other (``gateway_requests_total`` and the TTFT
and duration histograms, with pool and backend ``none`` and its cache label). The time spent
waiting for an embedding is its own metric and kept on the context (``embed_s``), so that
the gateway's overhead excludes it.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from starlette.responses import Response

from gateway.access_log import ms
from gateway.cache.response_cache import BYPASS, Lookup
from gateway.cache.store.cache_keys import query_text
from gateway.cache.store.capture import AnswerCapture
from gateway.cache.store.replay import fresh_answer, stream_chunks
from gateway.classify.model import ROUTING_TEXT_CHARS
from gateway.classify.vector_use import VectorUse
from gateway.embedding import Vectors
from gateway.metric_labels import NO_BACKEND, NO_POOL
from gateway.openai import sse
from gateway.openai.json_response import json_response
from gateway.openai.request import PROMPT_ENDPOINTS
from gateway.openai.streaming import EventStreamResponse, WholeStream
from gateway.path.context import RequestContext, classify, evolve
from gateway.path.flow import Flow, Services
from gateway.path.report import request_fields

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Cached:
    ctx: RequestContext  # with the routing embedding and kNN vote when there are any
    response: Response | None = None  # a hit, answered
    capture: AnswerCapture | None = None  # a miss whose answer is to be stored
    vector: Vectors | None = None  # the question's embedding, when the lookup made one


async def cache_stage(flow: Flow, services: Services) -> Flow | Response:
    """A hit's response (it takes no admission slot and no backend), or the flow with the
    cache's result (``ctx.cache``), the miss's capture and the routing embedding."""
    cached = await _looked_up(services, flow)
    ctx = evolve(cached.ctx, cache=flow.headers.get("x-gateway-cache"))
    if cached.response is not None:
        _report_hit(services, ctx)
        return cached.response
    knn, learned = services.caches.knn, ctx.policy.classify.vector_use is VectorUse.EMBED
    if knn is not None or learned:
        ctx, vector = await _routing_vector(services, ctx, cached.vector)
        if vector is not None:
            ctx = _routed(services, ctx, vector)
    return evolve(flow, ctx=ctx, capture=cached.capture)


def _report_hit(services: Services, ctx: RequestContext) -> None:
    now = services.clock()
    ctx.marks.mark("cache", now)  # the path ends here: this stage's own mark
    fields = {**request_fields(ctx, now), "status": 200, "ttft_ms": ms(now - ctx.arrival)}
    services.report.finished(fields, ctx.arrival, now, [*ctx.marks.ends, ("replay", now)])


def _routed(services: Services, ctx: RequestContext, vector: Vectors) -> RequestContext:
    """The context with what the difficulty routing reads of the question's embedding."""
    knn, learned = services.caches.knn, ctx.policy.classify.vector_use is VectorUse.EMBED
    vote = knn.vote(vector) if knn is not None else None
    return replace(ctx, difficulty_vote=vote, query_vector=vector if learned else None)


async def _routing_vector(
    services: Services, ctx: RequestContext, looked_up: Vectors | None
) -> tuple[RequestContext, Vectors | None]:
    """The embedding the routing reads, and the context with the time waited for it."""
    request = ctx.request
    route = ctx.policy.models.get(request.model)
    if route is None or not route.auto:
        return ctx, None  # only the gateway's own routing choices use the difficulty score
    if looked_up is not None:
        return ctx, looked_up  # one embedding serves the cache and the routing
    text = query_text(request.endpoint, request.body)
    if not text:
        return ctx, None
    timeout = ctx.policy.source.cache.semantic.embed_timeout_s
    started = services.clock()
    vector = await services.caches.embed(text[:ROUTING_TEXT_CHARS], timeout)
    return _waited_for_embedding(services, ctx, services.clock() - started), vector


def _waited_for_embedding(
    services: Services, ctx: RequestContext, seconds: float
) -> RequestContext:
    services.metrics.embedding_wait.observe(seconds)
    return replace(ctx, embed_s=ctx.embed_s + seconds)


async def _looked_up(services: Services, flow: Flow) -> Cached:
    ctx, headers = flow.ctx, flow.headers
    cache = services.caches.cache
    request = ctx.request
    route = ctx.policy.models.get(request.model)
    # An unknown model is refused by the plan stage; only chat and completion answers are
    # stored (an embedding is cheap to recompute, a Responses API answer is stateful).
    if cache is None or route is None or request.endpoint not in PROMPT_ENDPOINTS:
        headers["x-gateway-cache"] = "bypass"
        return Cached(ctx)
    started = services.clock()
    # The route is part of the scope: a reload that points the model elsewhere starts afresh.
    model = f"{request.model}@{route.pool or 'auto'}"
    try:
        lookup = await cache.lookup(request.endpoint, model, request.body, _scope_headers(ctx))
    except Exception:
        # A fault of the cache must cost a backend call, not the client's request.
        log.exception("cache lookup failed; the request goes to a backend uncached")
        services.metrics.cache_store_errors.labels("lookup").inc()
        lookup = BYPASS
    services.metrics.cache_lookup_seconds.observe(services.clock() - started)
    services.metrics.cache_lookups.labels(lookup.status).inc()
    headers["x-gateway-cache"] = lookup.status
    if lookup.embed_s is not None:
        ctx = _waited_for_embedding(services, ctx, lookup.embed_s)
    if lookup.entry is None:
        capture = cache.capture(lookup, request.endpoint)
        return Cached(ctx, capture=capture, vector=lookup.vector)
    cache.verify(lookup, partial(_verification, services, ctx, lookup))  # sampled; background
    return Cached(ctx, response=_answer(services, flow, ctx, lookup))


async def _verification(services: Services, ctx: RequestContext, lookup: Lookup) -> dict[str, Any]:
    """The backend's answer to a sampled hit's request, routed as its miss would be."""
    route = ctx.policy.models[ctx.request.model]
    if route.auto and lookup.vector is not None:
        ctx = _routed(services, ctx, lookup.vector)
    return await services.verify_hit(ctx)


def _scope_headers(ctx: RequestContext) -> dict[str, str]:
    """The headers the cache reads; with tenants in the policy, the tenant (not one of its
    keys) is who an answer is shared within."""
    headers = dict(ctx.headers)
    if ctx.tenant is not None:
        headers["authorization"] = f"tenant:{ctx.tenant}"
    return headers


def _answer(services: Services, flow: Flow, ctx: RequestContext, lookup: Lookup) -> Response:
    headers = flow.headers
    assert lookup.entry is not None
    stored = lookup.entry.answer
    if lookup.similarity is not None:
        headers["x-gateway-cache-similarity"] = f"{lookup.similarity:.3f}"
    # This request's own prompt: a semantic hit was asked in other words.
    classes = classify(ctx)
    answer = fresh_answer(
        stored,
        model=ctx.request.model,
        created=int(time.time()),
        prompt_tokens=classes.prompt_tokens,
    )
    _count_hit(services, ctx, lookup.status, classes.length.value)
    if not ctx.request.stream:
        return json_response(answer, headers=headers)
    options = ctx.request.body.get("stream_options")
    usage = isinstance(options, dict) and bool(options.get("include_usage"))
    chunks = stream_chunks(answer, include_usage=usage)
    # One write: the client's SDK gets the events as fast as it reads them.
    body = b"".join(sse.frame_json(chunk) for chunk in chunks) + sse.DONE
    return EventStreamResponse(WholeStream(body), flow.watch, headers)


def _count_hit(services: Services, ctx: RequestContext, status: str, length: str) -> None:
    """A hit is a finished request: its answer is ready to go, all of it at once."""
    m, elapsed = services.metrics, services.clock() - ctx.arrival
    m.requests.labels(ctx.request.model, NO_POOL, NO_BACKEND, "200", status).inc()
    m.ttft.labels(NO_POOL, length, status).observe(elapsed)
    m.e2e.labels(NO_POOL, length, status).observe(elapsed)
