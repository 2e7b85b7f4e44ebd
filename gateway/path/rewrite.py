"""The rewrite stage: canonicalise the request for backend prefix-cache hits, and say why a
session's prompt stopped sharing its prefix with the previous one.

Canonicalisation (``gateway/rewrite``) runs unless the policy turns it off or the client sends
``x-gateway-rewrite: off``; the response's ``x-gateway-rewrite`` says what changed. With an
``x-gateway-session`` header the forwarded prompt is compared with that session's previous
one; a break before the end of the previous prompt is reported in
``x-gateway-prefix-break: offset=<tokens>; cause=<cause>`` and in metrics. Only chat and
completions bodies are rewritten or tracked; every other endpoint's body goes as sent.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace

from gateway.metrics import GatewayMetrics
from gateway.openai.request import PROMPT_ENDPOINTS
from gateway.path.context import RequestContext
from gateway.path.flow import Flow, Services
from gateway.rewrite import MemoryPrefixStore, canonicalize, serialize

_MAX_KEY = 128


async def rewrite_stage(flow: Flow, services: Services) -> Flow:
    ctx = rewrite_request(flow.ctx, services.prefix_store, services.metrics, flow.headers)
    return flow if ctx is flow.ctx else replace(flow, ctx=ctx)  # (a copy costs microseconds)


def rewrite_request(
    ctx: RequestContext,
    store: MemoryPrefixStore | None,
    metrics: GatewayMetrics,
    headers: dict[str, str],
) -> RequestContext:
    if ctx.request.endpoint not in PROMPT_ENDPOINTS:
        return ctx  # embeddings, responses, vLLM's routes: forwarded as sent
    settings = ctx.policy.source.rewrite
    if settings.enabled and ctx.headers.get("x-gateway-rewrite", "").lower() != "off":
        result = canonicalize(ctx.request.body, ctx.policy.rewrite)
        if result.record.changed:
            ctx = replace(ctx, request=replace(ctx.request, body=result.body))
            for kind in result.record.kinds:
                metrics.rewrite_fragments.labels(kind).inc()
        headers["x-gateway-rewrite"] = result.record.summary()
    session = ctx.headers.get("x-gateway-session")
    if store is not None and session:
        found = store.observe(_key(session), serialize(ctx.request.body))
        if found is not None:
            headers["x-gateway-prefix-break"] = found.header_value()
            metrics.prefix_breaks.labels(found.cause.value).inc()
            metrics.prefix_break_offset.observe(found.token_offset)
    return ctx


def _key(session: str) -> str:
    # Long client-chosen keys must not grow the store's memory.
    if len(session) <= _MAX_KEY:
        return session
    return hashlib.blake2b(session.encode(), digest_size=16).hexdigest()
