"""The gateway in front of a real llama.cpp server serving a real model (Gemma 3 270M).

The OpenAI SDK talks to the gateway: chat and completions, whole and streamed. A client that
leaves in any phase the server sees (prefill, streaming, a whole answer being made) frees
the server's slot, and one that leaves the gateway's queue never reaches it. The gateway's
rewriting turns a system prompt with a timestamp into a prefix the server's cache reuses.
With every slot busy and the queue full the gateway sheds with ``Retry-After``, and it reads
the server's load from ``llamacpp:*`` metrics. The gateway's TTFT predictor learns the
server: after a warm-up its error is below its prior's.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable

import httpx2 as httpx
import openai
import pytest

from loadtests.real.probe import busy_slots, metrics, slots, wait_for
from loadtests.real.prompts import filler
from tests.real.helpers import (
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


@pytest.fixture
def client(llamacpp_gateway: str) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=llamacpp_gateway + "/v1", api_key="unused", max_retries=0, timeout=120
    )


def test_chat_and_completions_through_the_sdk(client: openai.OpenAI) -> None:
    check_chat_and_completions(client)


def test_streaming_chat_relays_tokens_and_usage(client: openai.OpenAI) -> None:
    check_streaming(client)


async def predicted(http: httpx.AsyncClient, url: str) -> float:
    return (await metrics(http, url))["llamacpp:tokens_predicted_total"]


async def in_slot(http: httpx.AsyncClient, url: str, *, decoded: bool) -> bool:
    """A slot holds a request that has (or has not yet) produced a token."""
    return any(
        s["is_processing"] and (s["next_token"][0]["n_decoded"] > 0) == decoded
        for s in await slots(http, url)
    )


# llama.cpp looks at a waiting client's connection only after a second in which no result of
# any task arrived (HTTP_POLLING_SECONDS in its server-context.cpp; the wait restarts on every
# result): requests to /slots or /metrics at a shorter interval hide a departure during
# prefill or a whole answer. So those phases are polled at this interval, and the gateway
# scrapes llama.cpp every 2 s (conftest.py).
QUIET_POLL_S = 1.5


async def assert_slot_freed(
    http: httpx.AsyncClient,
    url: str,
    gateway: str,
    phase: str,
    before: float,
    bound_s: float,
    poll_s: float = 0.05,
) -> float:
    """Every slot idle soon after the client left, far fewer tokens made than asked for, and
    the gateway counted the cancellation in ``phase``; the seconds until the slot was free."""
    took = await wait_for(
        lambda: busy_slots(http, url), lambda n: n == 0, timeout_s=bound_s, poll_s=poll_s
    )
    made = await predicted(http, url) - before
    assert made < LONG["max_tokens"] / 2, made
    await wait_for(lambda: cancellations(http, gateway, phase), lambda n: n == 1, timeout_s=2)
    return took


async def test_leaving_during_prefill_frees_the_slot(
    llamacpp: str, llamacpp_gateway: str, http: httpx.AsyncClient
) -> None:
    before = await predicted(http, llamacpp)
    body = chat_body(filler(1400), stream=True, **LONG)
    await leave_during(body, llamacpp_gateway, lambda: in_slot(http, llamacpp, decoded=False))
    await assert_slot_freed(
        http, llamacpp, llamacpp_gateway, "first_token", before, 20, poll_s=QUIET_POLL_S
    )


async def test_leaving_a_stream_frees_the_slot(
    llamacpp: str, llamacpp_gateway: str, http: httpx.AsyncClient
) -> None:
    before = await predicted(http, llamacpp)
    await leave_after_first_token(http, llamacpp_gateway)
    took = await assert_slot_freed(http, llamacpp, llamacpp_gateway, "streaming", before, bound_s=5)
    assert took < 2


async def test_leaving_a_whole_answer_frees_the_slot(
    llamacpp: str, llamacpp_gateway: str, http: httpx.AsyncClient
) -> None:
    before = await predicted(http, llamacpp)
    body = chat_body(filler(20), **LONG)
    await leave_during(body, llamacpp_gateway, lambda: in_slot(http, llamacpp, decoded=True))
    await assert_slot_freed(
        http, llamacpp, llamacpp_gateway, "non_streaming", before, 10, poll_s=QUIET_POLL_S
    )


async def test_rewriting_lets_the_server_reuse_the_prefix(
    llamacpp: str, llamacpp_gateway: str, http: httpx.AsyncClient
) -> None:
    """As sent, the server recomputes the whole prompt; rewritten, the timestamp moves after
    the stable text and the server reuses the prefix (its cached-token counter and the time
    to first token say so)."""

    async def reused() -> tuple[float, float]:
        found = await metrics(http, llamacpp)
        cached = found["llamacpp:prompt_tokens_cached_total"]
        return cached, cached + found["llamacpp:prompt_tokens_total"]

    raw_reused, raw_s, reused_tokens, rewritten_s = await prefix_reuse(
        http, llamacpp_gateway, uuid.uuid4().hex, reused
    )
    assert raw_reused < 64, raw_reused  # the chat template's opening, the nonce, the date
    assert reused_tokens > 500, reused_tokens
    assert rewritten_s < raw_s / 2, (rewritten_s, raw_s)


async def test_full_slots_queue_then_shed_and_load_is_scraped(
    llamacpp: str, llamacpp_gateway: str, http: httpx.AsyncClient
) -> None:
    """Four streams fill the four slots (the gateway reads ``requests_processing``), a fifth
    waits in the gateway's queue, never reaching the server, and leaves; two more find the
    queue full: 503 with ``Retry-After`` at once."""
    opened: list[int] = []
    holders = [asyncio.create_task(hold(http, llamacpp_gateway, opened)) for _ in range(4)]
    try:
        await wait_for(lambda: busy_slots(http, llamacpp), lambda n: n == 4, timeout_s=30)
        await wait_for(
            lambda: metrics(http, llamacpp_gateway),
            lambda m: m.get('gateway_backend_running{backend="real-0"}') == 4.0,
            timeout_s=10,
        )
        queued = await fill_queue_then_shed(http, llamacpp_gateway, holders)
        await leave_queue(http, llamacpp_gateway, queued)
        server = await metrics(http, llamacpp)
        assert server["llamacpp:requests_deferred"] == 0
        assert server["llamacpp:requests_processing"] == 4
        # Each head goes out with its stream's first token (until then the request can move).
        await wait_for(_heads(opened), lambda n: n == 4, timeout_s=60)
        assert opened == [200, 200, 200, 200]
    finally:
        await stop_all(holders)
    await wait_for(lambda: busy_slots(http, llamacpp), lambda n: n == 0, timeout_s=10)


@pytest.mark.timeout(600)  # 28 real requests, 12 of them long prompts, on 2 shared cores
async def test_the_ttft_predictor_learns_the_server(llamacpp: str) -> None:
    await check_predictor_learns(llamacpp, "llamacpp")


def _heads(opened: list[int]) -> Callable[[], Awaitable[int]]:
    """How many of the streams' response heads came (each with its first token)."""

    async def read() -> int:
        return len(opened)

    return read
