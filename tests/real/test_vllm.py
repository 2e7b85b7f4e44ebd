"""The gateway in front of a real vLLM (CPU build) serving Gemma 3 270M. Opt-in:
``bash .ci/real-vllm``.

The same checks as against llama.cpp (the SDK's chat and completions, streaming, a client
leaving in prefill, while streaming and during a whole answer, prefix reuse through the
rewriting, shedding when the engine is full), plus the real ``vllm:*`` metrics: each
departure aborts the request in vLLM (nothing running, nothing finished, few tokens), the
load the gateway scrapes (running, waiting, KV usage, prefix-cache hit rate), and load-aware
routing away from a replica whose queue is long; and the gateway's TTFT predictor learning
the engine (its error after a warm-up below its prior's).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Iterator

import httpx2 as httpx
import openai
import pytest

from gateway.app import build_app
from gateway.policy import load_policy_text
from loadtests.real.model import SERVED_NAME
from loadtests.real.policy import real_policy
from loadtests.real.probe import metrics, wait_for
from loadtests.real.prompts import filler
from tests.real.helpers import (
    CHAT,
    LONG,
    cancellations,
    chat_body,
    check_chat_and_completions,
    check_predictor_learns,
    check_streaming,
    fill_queue_then_shed,
    hold,
    leave_after_first_token,
    leave_during,
    leave_queue,
    prefix_reuse,
    stop_all,
)
from tests.support.servers import serve

# vLLM 0.32 counts a request in request_success_total when it ends with a finish reason
# (stop, length, ...); one aborted by its client's departure is dropped by the API server
# without reaching that counter (its finished_reason="abort" series counts engine-side
# aborts). So an abort shows as: nothing running, no new finished request, few tokens.
FINISHED = "vllm:request_success_total"


@pytest.fixture
def client(vllm_gateway: str) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=vllm_gateway + "/v1", api_key="unused", max_retries=0, timeout=120
    )


def test_chat_and_completions_through_the_sdk(client: openai.OpenAI) -> None:
    check_chat_and_completions(client)


def test_streaming_chat_relays_tokens_and_usage(client: openai.OpenAI) -> None:
    check_streaming(client)


async def counters(http: httpx.AsyncClient, url: str) -> tuple[float, float]:
    """(generated tokens, finished requests) since vLLM started."""
    found = await metrics(http, url)
    return found["vllm:generation_tokens_total"], found[FINISHED]


async def running(http: httpx.AsyncClient, url: str) -> float:
    return (await metrics(http, url))["vllm:num_requests_running"]


async def assert_aborted(
    http: httpx.AsyncClient, url: str, gateway: str, phase: str, before: tuple[float, float]
) -> None:
    """Nothing running soon after the client left, vLLM finished nothing (it aborted), far
    fewer tokens were made than asked for, and the gateway counted the cancellation in
    ``phase``."""
    await wait_for(lambda: running(http, url), lambda n: n == 0, timeout_s=5)
    tokens, finished = await counters(http, url)
    assert finished == before[1]
    assert tokens - before[0] < LONG["max_tokens"] / 2
    await wait_for(lambda: cancellations(http, gateway, phase), lambda n: n == 1, timeout_s=2)


async def test_leaving_during_prefill_is_aborted(
    vllm: str, vllm_gateway: str, http: httpx.AsyncClient
) -> None:
    before = await counters(http, vllm)

    async def prefilling() -> bool:
        tokens, _ = await counters(http, vllm)
        return await running(http, vllm) == 1 and tokens == before[0]

    body = chat_body(filler(3400), stream=True, **LONG)
    await leave_during(body, vllm_gateway, prefilling)
    await assert_aborted(http, vllm, vllm_gateway, "first_token", before)


async def test_leaving_a_stream_is_aborted(
    vllm: str, vllm_gateway: str, http: httpx.AsyncClient
) -> None:
    before = await counters(http, vllm)
    await leave_after_first_token(http, vllm_gateway)
    await assert_aborted(http, vllm, vllm_gateway, "streaming", before)


async def test_leaving_a_whole_answer_is_aborted(
    vllm: str, vllm_gateway: str, http: httpx.AsyncClient
) -> None:
    before = await counters(http, vllm)

    async def decoding() -> bool:
        tokens, _ = await counters(http, vllm)
        return tokens > before[0]

    await leave_during(chat_body(filler(20), **LONG), vllm_gateway, decoding)
    await assert_aborted(http, vllm, vllm_gateway, "non_streaming", before)


async def test_rewriting_lets_vllm_reuse_the_prefix(
    vllm: str, vllm_gateway: str, http: httpx.AsyncClient
) -> None:
    async def reused() -> tuple[float, float]:
        found = await metrics(http, vllm)
        return found["vllm:prefix_cache_hits_total"], found["vllm:prefix_cache_queries_total"]

    # For a model with sliding-window layers (Gemma 3) vLLM keeps a prefix's checkpoint only
    # where two requests were seen to diverge (--prefix-cache-retention-interval 0, the
    # default): the third request with the rewritten prefix is the first to reuse it.
    raw_reused, raw_s, reused_tokens, rewritten_s = await prefix_reuse(
        http, vllm_gateway, uuid.uuid4().hex, reused, warm=2
    )
    assert raw_reused < 64, raw_reused  # the chat template's opening, the nonce, the date
    assert reused_tokens > 500, reused_tokens
    assert rewritten_s < raw_s, (rewritten_s, raw_s)
    scraped = await wait_for(
        lambda: metrics(http, vllm_gateway),
        lambda m: m.get('gateway_backend_prefix_cache_hit_rate{backend="real-0"}', 0) > 0,
        timeout_s=5,
    )
    assert scraped < 5


async def test_full_engine_sheds_and_its_load_is_scraped(
    vllm: str, vllm_gateway: str, http: httpx.AsyncClient
) -> None:
    opened: list[int] = []
    holders = [asyncio.create_task(hold(http, vllm_gateway, opened)) for _ in range(4)]
    try:
        await wait_for(lambda: running(http, vllm), lambda n: n == 4, timeout_s=30)
        await wait_for(
            lambda: metrics(http, vllm_gateway),
            lambda m: (
                m.get('gateway_backend_running{backend="real-0"}') == 4.0
                and m.get('gateway_backend_kv_cache_usage{backend="real-0"}', 0) > 0
            ),
            timeout_s=5,
        )
        queued = await fill_queue_then_shed(http, vllm_gateway, holders)
        await leave_queue(http, vllm_gateway, queued)
        server = await metrics(http, vllm)
        assert server["vllm:num_requests_waiting"] == 0
        assert server["vllm:num_requests_running"] == 4
        # Each head goes out with its stream's first token (until then the request can move).
        await wait_for(_heads(opened), lambda n: n == 4, timeout_s=60)
        assert opened == [200, 200, 200, 200]
    finally:
        await stop_all(holders)
    await wait_for(lambda: running(http, vllm), lambda n: n == 0, timeout_s=10)


@pytest.fixture
def two_engine_gateway(vllm: str, llamacpp: str) -> Iterator[str]:
    """Pool ``cpu``: the real vLLM (``real-0``) and the real llama.cpp (``llama-1``); replicas
    are chosen on load alone (no prefix, session, KV or latency weight)."""
    extra = f"""
  - name: llama-1
    url: {llamacpp}
    engine: llamacpp
    model: {SERVED_NAME}
    pool: cpu
    max_inflight: 4
"""
    text = real_policy(vllm, "vllm").replace("\nmodels:", extra + "models:", 1)
    text = text.replace(
        "    retry: {attempts: 1}",
        "    retry: {attempts: 1}\n    scheduling:\n"
        "      weights: {prefix: 0, queue: 1, kv_cache: 0, latency: 0, session: 0}",
    )
    with serve(build_app(load_policy_text(text))) as url:
        yield url


async def test_load_aware_routing_avoids_the_queued_engine(
    vllm: str, two_engine_gateway: str, http: httpx.AsyncClient
) -> None:
    """Six long streams sent to vLLM directly (the gateway does not see them) leave two
    waiting there; the gateway reads ``vllm:num_requests_waiting`` and sends its requests to
    llama.cpp."""
    direct = [asyncio.create_task(hold(http, vllm, [], SERVED_NAME)) for _ in range(6)]
    try:
        await wait_for(
            lambda: metrics(http, two_engine_gateway),
            lambda m: m.get('gateway_backend_waiting{backend="real-0"}') == 2.0,
            timeout_s=30,
        )
        for _ in range(3):
            answer = await http.post(two_engine_gateway + CHAT, json=chat_body("hi", max_tokens=2))
            assert answer.status_code == 200
            assert answer.headers["x-gateway-backend"] == "llama-1"
    finally:
        await stop_all(direct)


@pytest.mark.timeout(600)  # 28 real requests, 12 of them long prompts, on 2 shared cores
async def test_the_ttft_predictor_learns_the_engine(vllm: str) -> None:
    await check_predictor_learns(vllm, "vllm")


def _heads(opened: list[int]) -> Callable[[], Awaitable[int]]:
    """How many of the streams' response heads came (each with its first token)."""

    async def read() -> int:
        return len(opened)

    return read
