"""Benchmark: the cost of the compression stage per request, and of the summary fact check.

Method: chat conversations of 20, 60 and 200 turns (each message about 100 tokens of prose),
for a pool with ``max_context: 8192`` and compression on (the 20-turn one fits; the others are
compressed): the plan stage and the compression stage together, as on the request path (the
plan stage's token estimate tells the compression stage when a request fits), each
``--calls`` times, one call per sample; then ``check_summary`` on the text a 60-turn
compression drops. Prints p50/p99/max in microseconds.

Then the step trade-off: a conversation growing one turn per request up to 150 turns, budget
7,936 tokens, compressed with several ``step_tokens``; for each, the share of a request's
prompt tokens that repeat the previous request's prompt as a prefix (whole messages; what a
backend prefix cache can reuse), and the prompt tokens sent (context kept), both averaged
over the requests that were compressed.

Parameters: ``--calls`` (samples per case).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry

from gateway.classify import EstimateCounter
from gateway.metrics import GatewayMetrics
from gateway.openai.request import ParsedRequest
from gateway.path.compress import compress_request
from gateway.path.context import RequestContext
from gateway.path.plan import plan_pool
from gateway.policy import load_policy_text
from gateway.rewrite.history_trim import CompressConfig, compress
from gateway.rewrite.summary_cache import transcript
from gateway.rewrite.summary_check import check_summary
from loadtests.loadgen.stats import percentile

POLICY = """
backends:
  - {name: s0, url: "http://127.0.0.1:1", model: m, pool: main}
models:
  chat: {pool: main}
pools:
  main:
    max_context: 8192
    compression: {enabled: true, keep_last_turns: 4}
"""

PROSE = (
    "On 2026-11-03 the Berlin Office shipped 14 units of part AX-220 to Nordic Freight, and "
    "the invoice INV-5531 for 2,450.00 euros is still open. Please keep the order as agreed "
)


def conversation(turns: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are helpful."}]
    for t in range(turns):
        messages.append({"role": "user", "content": f"Turn {t}. " + PROSE * 2})
        messages.append({"role": "assistant", "content": f"Answer {t}. " + PROSE * 2})
    return messages


def _time(call: Callable[[], object], calls: int) -> str:
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1e6)
    samples.sort()
    return (
        f"p50 {percentile(samples, 50):8.1f}  p99 {percentile(samples, 99):8.1f}  "
        f"max {samples[-1]:8.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m loadtests.compression_cost", description=__doc__
    )
    parser.add_argument("--calls", type=int, default=500)
    args = parser.parse_args()
    policy = load_policy_text(POLICY)
    metrics = GatewayMetrics(CollectorRegistry())
    counter = EstimateCounter()
    for turns in (20, 60, 200):
        messages = conversation(turns)
        body = {"model": "chat", "messages": messages, "max_tokens": 256}
        ctx = RequestContext("r", 0.0, ParsedRequest("chat", "chat", False, body), policy, {})
        tokens = counter.count_messages(messages)

        def stages(ctx: RequestContext = ctx) -> object:
            return compress_request(ctx, plan_pool(ctx), None, metrics, {})[0]

        print(f"plan + compress {turns:3d} turns ({tokens:6d} tokens): {_time(stages, args.calls)}")
    dropped = compress(conversation(60), counter, CompressConfig(7936, 4)).dropped
    text = transcript(dropped)
    summary = text[: len(text) // 2]

    def check() -> object:
        return check_summary(text, summary)

    print(f"check_summary on {counter.count(text)} dropped tokens: {_time(check, args.calls)}")
    for step in (1, 496, 992, 1984, 3968):
        reuse, kept = _step_tradeoff(counter, CompressConfig(7936, 4, step))
        print(f"step_tokens {step:5d}: prefix reused {reuse:6.1%}, prompt tokens sent {kept:7.0f}")


def _step_tradeoff(counter: EstimateCounter, config: CompressConfig) -> tuple[float, float]:
    previous: tuple[Any, ...] = ()
    shares, sizes = [], []
    for turns in range(1, 151):
        result = compress(conversation(turns), counter, config)
        if result.record is not None:
            shared = 0
            for mine, theirs in zip(result.messages, previous, strict=False):
                if mine != theirs:
                    break
                shared += 1
            prefix = counter.count_messages(result.messages[:shared]) if shared else 0
            shares.append(prefix / result.record.tokens_after)
            sizes.append(result.record.tokens_after)
        previous = result.messages
    return sum(shares) / len(shares), sum(sizes) / len(sizes)
