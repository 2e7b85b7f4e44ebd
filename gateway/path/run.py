"""One request through the path, stage by stage, in the order they run.

``edge/routes.py`` reads and parses the request and calls ``identify.identified`` (who, how
big, which model, how often, what priority); then ``serve`` runs the rest:

    rewrite -> cache -> plan -> compress -> admit -> dispatch -> relay

and ``report`` records every request once, however it ends: in the lease of a served one
(``lease.py``), here for a cache hit, and in ``refused`` for a refusal. Each stage's module
is the one place its decision is made; ``x-gateway-*`` response headers and the metrics say
what each decided (the README's "How it works" maps them).
"""

from __future__ import annotations

from dataclasses import replace

from starlette.responses import Response

from gateway.access_log import ms
from gateway.openai.disconnect import DisconnectWatch
from gateway.path.admit import admit
from gateway.path.cache import cache_stage
from gateway.path.compress import compress_stage
from gateway.path.context import RequestContext
from gateway.path.plan import plan_pool
from gateway.path.report import request_fields
from gateway.path.rewrite import rewrite_stage
from gateway.runtime.parts import Gateway


async def serve(
    gateway: Gateway, ctx: RequestContext, headers: dict[str, str], watch: DisconnectWatch
) -> Response:
    """The stages after identification; raises ``GatewayError`` for a refusal."""
    dispatcher, relay = gateway.require_started()
    marks, clock = ctx.marks, gateway.clock
    ctx = rewrite_stage(ctx, gateway.prefix_store, gateway.metrics, headers)
    marks.mark("rewrite", clock())
    cached = await cache_stage(gateway, ctx, headers, watch)
    ctx = replace(cached.ctx, cache=headers.get("x-gateway-cache"))
    marks.mark("cache", clock())
    if cached.response is not None:
        _report_hit(gateway, ctx)
        return cached.response  # a hit takes no admission slot and no backend
    plan = plan_pool(ctx)
    marks.mark("plan", clock())
    ctx, plan = compress_stage(ctx, plan, gateway.summaries, gateway.metrics, headers)
    marks.mark("compress", clock())
    admitted = await admit(gateway.admissions, gateway.metrics, ctx, plan, gateway.prompt_tokens)
    marks.mark("admit", clock())
    headers["x-gateway-queue-ms"] = str(round(admitted.permit.queued_s * 1000))
    try:
        opened = await dispatcher.open(ctx, admitted.plan, admitted.permit)
        marks.mark("upstream_open", clock())
    except BaseException:
        # Released already unless the request ended between attempts; release is idempotent.
        admitted.permit.release(latency_s=None, dropped=False)
        raise
    lease = opened.lease
    headers["x-gateway-pool"] = lease.plan.pool.name
    headers["x-gateway-route-reason"] = lease.plan.reason
    headers["x-gateway-backend"] = lease.backend.name
    capture = cached.capture
    if opened.degraded or admitted.degraded:
        headers["x-gateway-degraded"] = "1"
        capture = None  # the cache key names the planned pool: a smaller pool's answer is not its
    return await relay.respond(lease, opened.response, headers, watch, capture)


def _report_hit(gateway: Gateway, ctx: RequestContext) -> None:
    now = gateway.clock()
    fields = {**request_fields(ctx, now), "status": 200, "ttft_ms": ms(now - ctx.arrival)}
    gateway.report.finished(fields, ctx.arrival, now, [*ctx.marks.ends, ("replay", now)])
