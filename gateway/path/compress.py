"""The compression stage: fit a long chat into its pool's token budget instead of refusing it.

Runs after the plan stage, for chat requests to a pool whose ``compression`` is enabled; such
a pool's context check moves here from planning. The budget is the pool's
``compression.budget_tokens`` and, with ``max_context``, at most ``max_context`` minus the
completion (the client's ``max_tokens``, else ``reserve_tokens``). Over it, the history is
compressed (``gateway.rewrite.history_trim``); with ``summary.enabled`` a cached, fact-checked
summary replaces the truncation marker when there is one, and a missing one is requested in
the background (``gateway.rewrite.summaries``); meanwhile the summary of an earlier,
shorter cut of the same conversation is used for the messages it covers
(``partial_summary``). The response says what happened in ``x-gateway-compressed:
method=<truncated|summary|partial_summary>; dropped=<messages>; tokens=<before>-><after>``.

A request that cannot be brought under the budget is sent as it is when it fits
``max_context`` (or the pool has none), else refused with the usual 400
``context_length_exceeded`` naming its token count and the limit. ``x-gateway-rewrite: off``
turns compression off for the request (the context check still applies).
"""

from __future__ import annotations

from dataclasses import replace

from gateway.classify import EstimateCounter, requested_max_tokens
from gateway.metrics import GatewayMetrics
from gateway.path.context import Plan, RequestContext, owns_context_check, require_fit
from gateway.path.flow import Flow, Services
from gateway.policy.compile import PoolSpec
from gateway.rewrite.history_trim import CompressConfig, Compression, compress, with_summary
from gateway.rewrite.summaries import SummaryService
from gateway.schema import Compression as CompressionSettings

# The plan stage counts with the same estimate, so both stages agree on a request's size.
_COUNTER = EstimateCounter()


async def compress_stage(flow: Flow, services: Services) -> Flow:
    ctx, plan = compress_request(
        flow.ctx, flow.planned(), services.summaries, services.metrics, flow.headers
    )
    if ctx is flow.ctx and plan is flow.plan:
        return flow  # nothing to compress (a copy costs microseconds)
    return replace(flow, ctx=ctx, plan=plan)


def compress_request(
    ctx: RequestContext,
    plan: Plan,
    summaries: SummaryService | None,
    metrics: GatewayMetrics,
    headers: dict[str, str],
) -> tuple[RequestContext, Plan]:
    """The request fitted to its pool's context, and the plan with the count it now has."""
    pool = plan.pool
    if not owns_context_check(ctx, pool):
        return ctx, plan
    settings = pool.settings.compression
    body = ctx.request.body
    messages = body["messages"]
    budget = _budget(pool, settings, requested_max_tokens(body))
    counted = plan.prompt_tokens
    if counted is not None and 0 < counted <= budget:
        return ctx, plan  # fits the budget, so the context too: no need to count again
    if budget < 1 or ctx.headers.get("x-gateway-rewrite", "").lower() == "off":
        require_fit(ctx, pool, counted or _COUNTER.count_messages(messages))
        return ctx, plan
    config = CompressConfig(budget, settings.keep_last_turns, settings.step_tokens)
    result = compress(messages, _COUNTER, config)
    if result.record is None:
        require_fit(ctx, pool, result.tokens_before)
        return ctx, plan
    if settings.summary.enabled and summaries is not None:
        result = _with_cached_summary(ctx, result, settings, summaries, budget)
    record = result.record
    assert record is not None
    headers["x-gateway-compressed"] = record.header_value()
    metrics.compressions.labels(pool.name, record.method.value).inc()
    metrics.compression_saved_tokens.labels(pool.name).inc(
        max(0, record.tokens_before - record.tokens_after)
    )
    compressed = {**body, "messages": list(result.messages)}
    ctx = replace(ctx, request=replace(ctx.request, body=compressed))
    return ctx, replace(plan, prompt_tokens=record.tokens_after)


def _budget(pool: PoolSpec, settings: CompressionSettings, max_tokens: int | None) -> int:
    limits = [] if settings.budget_tokens is None else [settings.budget_tokens]
    if pool.settings.max_context is not None:
        completion = max_tokens if max_tokens is not None else settings.reserve_tokens
        # The count is an estimate (p95 error 13% on prose and code): a request compressed
        # to exactly the window by estimate may not fit the backend's tokenizer.
        room = pool.settings.max_context - completion
        limits.append(int(room * (1 - settings.context_margin)))
    return min(limits)  # the compile step guarantees one of the two


def _with_cached_summary(
    ctx: RequestContext,
    result: Compression,
    settings: CompressionSettings,
    summaries: SummaryService,
    budget: int,
) -> Compression:
    scope = ctx.headers.get("x-gateway-session", "")
    text = summaries.find(scope, result, settings.summary, _COUNTER)
    if text is not None:
        return with_summary(result, text, _COUNTER, budget) or result
    # While the summary of this cut is being written, an earlier cut's summary still beats a
    # bare marker: it covers the first dropped messages, the note says the rest are left out.
    earlier = summaries.earlier(scope, result)
    if earlier is None:
        return result
    covered, text = earlier
    return with_summary(result, text, _COUNTER, budget, covered) or result
