"""Benchmark: what the security checks add per request.

Method: a policy with 1,000 tenants (one key each, a rate limit of 10^7 requests per minute so
nothing is refused) and input limits; time, ``--calls`` times each, one call per sample:
``identify`` (parse the Bearer header, SHA-256, dict lookup) for a valid and a wrong key, and
``screen`` (input limits, model permission, memory rate limit) on a 6-turn chat request.
Prints p50/p99/max in microseconds.

Parameters: ``--calls`` (samples per measurement).
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable

import orjson

from gateway.errors import Unauthorized
from gateway.openai.parse import parse_request
from gateway.openai.request import ParsedRequest
from gateway.path.identify import identify, screen
from gateway.policy import load_policy_text
from gateway.policy.compile import CompiledPolicy
from gateway.security.api_keys import hash_key, new_key
from gateway.security.tenant_limits import TenantRateLimits
from gateway.security.tenants import Caller
from loadtests.loadgen.stats import percentile

TENANTS = 1000


def _policy(keys: list[str]) -> str:
    tenants = "\n".join(
        f'    t{i}: {{keys: ["{hash_key(k)}"], rate_limit: {{requests_per_minute: 10000000}}}}'
        for i, k in enumerate(keys)
    )
    return f"""
backends:
  - {{name: s0, url: "http://127.0.0.1:1", model: m, pool: small}}
models:
  fast: {{pool: small}}
limits: {{max_messages: 64, max_message_chars: 20000, max_tokens: 4096, max_n: 4}}
auth:
  tenants:
{tenants}
"""


def _time(fn: Callable[[], object], calls: int) -> list[float]:
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1e6)
    return sorted(samples)


def _row(name: str, samples: list[float]) -> None:
    p50, p99 = percentile(samples, 50), percentile(samples, 99)
    print(f"{name:<28} p50 {p50:7.1f} us   p99 {p99:7.1f} us   max {samples[-1]:7.1f} us")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m loadtests.security_cost", description=__doc__)
    parser.add_argument("--calls", type=int, default=5000)
    args = parser.parse_args()
    keys = [new_key() for _ in range(TENANTS)]
    policy = load_policy_text(_policy(keys))
    good = {"authorization": f"Bearer {keys[TENANTS // 2]}"}
    wrong = {"authorization": f"Bearer {new_key()}"}
    turns = [{"role": r, "content": "word " * 60} for r in ("user", "assistant") * 3]
    raw = orjson.dumps({"model": "fast", "messages": turns, "max_tokens": 256})
    caller = identify(policy, good)
    limits = TenantRateLimits(time.monotonic)
    request = parse_request("chat", raw)

    def wrong_key() -> None:
        try:
            identify(policy, wrong)
        except Unauthorized:
            return  # the 401 is the outcome being timed
        raise AssertionError("a wrong key was accepted")

    _row("identify (valid key)", _time(lambda: identify(policy, good), args.calls))
    _row("identify (wrong key, 401)", _time(wrong_key, args.calls))
    screened = asyncio.run(_time_screen(policy, caller, request, limits, args.calls))
    _row("screen (6-turn chat)", screened)


async def _time_screen(
    policy: CompiledPolicy,
    caller: Caller | None,
    request: ParsedRequest,
    limits: TenantRateLimits,
    calls: int,
) -> list[float]:
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        await screen(policy, caller, request, limits)
        samples.append((time.perf_counter() - start) * 1e6)
    return sorted(samples)
