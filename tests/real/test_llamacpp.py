"""The gateway in front of a real llama.cpp server serving a real model (Gemma 3 270M).

The OpenAI SDK talks to the gateway: chat and completions, whole and streamed. A client that
leaves in any phase the server sees (prefill, streaming, a whole answer being made) frees
the server's slot, and one that leaves the gateway's queue never reaches it. The gateway's
rewriting turns a system prompt with a timestamp into a prefix the server's cache reuses.
With every slot busy and the queue full the gateway sheds with ``Retry-After``, and it reads
the server's load from ``llamacpp:*`` metrics.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx2 as httpx
import openai
import pytest

from loadtests.real.probe import busy_slots, metrics, slots, wait_for
from loadtests.real.prompts import filler

CHAT = "/v1/chat/completions"
PUBLIC = "gemma"
# A long generation that only a cancellation stops early.
LONG = {"max_tokens": 400, "ignore_eos": True}


@pytest.fixture
def client(llamacpp_gateway: str) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=llamacpp_gateway + "/v1", api_key="unused", max_retries=0, timeout=120
    )


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=120) as client:
        yield client


def chat_body(content: str, **extra: Any) -> dict[str, Any]:
    return {"model": PUBLIC, "messages": [{"role": "user", "content": content}], **extra}


def test_chat_and_completions_through_the_sdk(client: openai.OpenAI) -> None:
    chat = client.chat.completions.with_raw_response.create(
        model=PUBLIC, messages=[{"role": "user", "content": "Name a colour."}], max_tokens=8
    )
    assert chat.headers["x-gateway-backend"] == "real-0"
    answer = chat.parse()
    assert answer.model == PUBLIC
    assert answer.choices[0].message.role == "assistant"
    assert answer.usage is not None
    assert answer.usage.prompt_tokens > 5
    assert 0 < answer.usage.completion_tokens <= 8

    text = client.completions.create(model=PUBLIC, prompt="The sky is", max_tokens=6)
    assert text.model == PUBLIC
    assert text.choices[0].text
    assert text.usage is not None
    assert text.usage.completion_tokens <= 6


def test_streaming_chat_relays_tokens_and_usage(client: openai.OpenAI) -> None:
    stream = client.chat.completions.create(
        model=PUBLIC,
        messages=[{"role": "user", "content": "Count from one to ten."}],
        max_tokens=24,
        stream=True,
        stream_options={"include_usage": True},
        extra_body={"ignore_eos": True},
    )
    chunks = list(stream)
    content = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta]
    assert sum(1 for piece in content if piece) >= 10
    assert {c.model for c in chunks} == {PUBLIC}
    usage = chunks[-1].usage
    assert usage is not None
    assert usage.completion_tokens == 24


async def predicted(http: httpx.AsyncClient, url: str) -> float:
    return (await metrics(http, url))["llamacpp:tokens_predicted_total"]


async def cancellations(http: httpx.AsyncClient, gateway: str, phase: str) -> float:
    found = await metrics(http, gateway)
    return found.get(f'gateway_cancellations_total{{phase="{phase}"}}', 0.0)


async def prefilling(http: httpx.AsyncClient, url: str) -> bool:
    """A slot holds a request that has not produced a token yet."""
    return any(
        s["is_processing"] and s["next_token"][0]["n_decoded"] == 0 for s in await slots(http, url)
    )


async def decoding(http: httpx.AsyncClient, url: str) -> bool:
    return any(
        s["is_processing"] and s["next_token"][0]["n_decoded"] > 0 for s in await slots(http, url)
    )


async def assert_slot_freed(
    http: httpx.AsyncClient, url: str, gateway: str, phase: str, before: float, bound_s: float
) -> None:
    """Every slot idle soon after the client left, far fewer tokens made than asked for, and
    the gateway counted the cancellation in ``phase``."""
    await wait_for(lambda: busy_slots(http, url), lambda n: n == 0, timeout_s=bound_s)
    made = await predicted(http, url) - before
    assert made < LONG["max_tokens"] / 2, made
    await wait_for(lambda: cancellations(http, gateway, phase), lambda n: n == 1, timeout_s=2)


async def test_leaving_during_prefill_frees_the_slot(
    llamacpp: str, llamacpp_gateway: str, http: httpx.AsyncClient
) -> None:
    before = await predicted(http, llamacpp)
    body = chat_body(filler(1400), stream=True, **LONG)

    async def stream() -> None:
        async with http.stream("POST", llamacpp_gateway + CHAT, json=body) as response:
            async for _ in response.aiter_raw():
                pass

    task = asyncio.create_task(stream())
    await wait_for(lambda: prefilling(http, llamacpp), bool, timeout_s=30)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    # The server checks for cancelled tasks between prompt batches (512 tokens).
    await assert_slot_freed(http, llamacpp, llamacpp_gateway, "first_token", before, bound_s=15)


async def test_leaving_a_stream_frees_the_slot(
    llamacpp: str, llamacpp_gateway: str, http: httpx.AsyncClient
) -> None:
    before = await predicted(http, llamacpp)
    body = chat_body(filler(20), stream=True, **LONG)
    async with http.stream("POST", llamacpp_gateway + CHAT, json=body) as response:
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if '"content":"' in line.replace(" ", ""):
                break
        left = time.monotonic()
    await assert_slot_freed(http, llamacpp, llamacpp_gateway, "streaming", before, bound_s=5)
    assert time.monotonic() - left < 5


async def test_leaving_a_whole_answer_frees_the_slot(
    llamacpp: str, llamacpp_gateway: str, http: httpx.AsyncClient
) -> None:
    before = await predicted(http, llamacpp)
    body = chat_body(filler(20), **LONG)
    task = asyncio.create_task(http.post(llamacpp_gateway + CHAT, json=body))
    await wait_for(lambda: decoding(http, llamacpp), bool, timeout_s=30)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    await assert_slot_freed(http, llamacpp, llamacpp_gateway, "non_streaming", before, bound_s=5)


SYSTEM = "Current time: {now}. You are the support assistant of a hardware shop. " + " ".join(
    f"Rule {i}: answer politely, cite the order number and stay brief." for i in range(60)
)


async def first_token_s(
    http: httpx.AsyncClient, gateway: str, system: str, **headers: str
) -> float:
    body = {
        "model": PUBLIC,
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": "Where is my order?"},
        ],
        "max_tokens": 4,
        "stream": True,
    }
    start = time.monotonic()
    async with http.stream("POST", gateway + CHAT, json=body, headers=headers) as response:
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if '"content":"' in line.replace(" ", ""):
                return time.monotonic() - start
    raise AssertionError("no token")


async def cached_tokens(http: httpx.AsyncClient, url: str) -> float:
    return (await metrics(http, url))["llamacpp:prompt_tokens_cached_total"]


async def test_rewriting_lets_the_server_reuse_the_prefix(
    llamacpp: str, llamacpp_gateway: str, http: httpx.AsyncClient
) -> None:
    """Only the timestamp differs between requests; it opens the system prompt. As sent, the
    server recomputes the whole prompt; rewritten, the timestamp moves after the stable text
    and the server reuses the prefix (its cached-token counter and the time to first token)."""
    nonce = uuid.uuid4().hex  # this test's prompts share nothing with earlier ones
    system = nonce + " " + SYSTEM

    def stamp(second: int) -> str:
        return system.format(now=f"2026-11-22T01:{second:02d}:07Z")

    off = {"x-gateway-rewrite": "off"}
    await first_token_s(http, llamacpp_gateway, stamp(1), **off)
    cached = await cached_tokens(http, llamacpp)
    raw_s = await first_token_s(http, llamacpp_gateway, stamp(2), **off)
    raw_reused = await cached_tokens(http, llamacpp) - cached

    await first_token_s(http, llamacpp_gateway, stamp(3))
    cached = await cached_tokens(http, llamacpp)
    rewritten_s = await first_token_s(http, llamacpp_gateway, stamp(4))
    reused = await cached_tokens(http, llamacpp) - cached

    assert raw_reused < 20, raw_reused  # the BOS and the nonce, at most
    assert reused > 500, reused
    assert rewritten_s < raw_s / 2, (rewritten_s, raw_s)


async def test_full_slots_queue_then_shed_and_load_is_scraped(
    llamacpp: str, llamacpp_gateway: str, http: httpx.AsyncClient
) -> None:
    """Four streams fill the four slots (the gateway reads ``requests_processing``), a fifth
    waits in the gateway's queue (never reaching the server) and leaves, a sixth and seventh
    find the queue full: 429 with ``Retry-After`` at once."""
    holders: list[asyncio.Task[None]] = []
    started = asyncio.Event()
    opened: list[int] = []

    async def hold() -> None:
        body = chat_body(filler(10), stream=True, **LONG)
        async with http.stream("POST", llamacpp_gateway + CHAT, json=body) as response:
            opened.append(response.status_code)
            started.set()
            async for _ in response.aiter_raw():
                pass

    try:
        holders = [asyncio.create_task(hold()) for _ in range(4)]
        await wait_for(lambda: busy_slots(http, llamacpp), lambda n: n == 4, timeout_s=30)
        await wait_for(
            lambda: metrics(http, llamacpp_gateway),
            lambda m: m.get('gateway_backend_running{backend="real-0"}') == 4.0,
            timeout_s=5,
        )
        server_before = await metrics(http, llamacpp)

        queued = asyncio.create_task(hold())
        depth = 'gateway_queue_depth{lane="short",pool="cpu",priority="standard"}'
        await wait_for(
            lambda: metrics(http, llamacpp_gateway), lambda m: m[depth] == 1, timeout_s=5
        )
        for _ in range(2):
            start = time.monotonic()
            refused = await http.post(llamacpp_gateway + CHAT, json=chat_body("hi", max_tokens=4))
            assert refused.status_code == 429
            assert int(refused.headers["retry-after"]) >= 1
            assert time.monotonic() - start < 1.0

        queued.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await queued
        await wait_for(
            lambda: metrics(http, llamacpp_gateway), lambda m: m[depth] == 0, timeout_s=5
        )
        assert await cancellations(http, llamacpp_gateway, "queued") == 1
        server_after = await metrics(http, llamacpp)
        assert server_after["llamacpp:requests_deferred"] == 0
        assert server_after["llamacpp:requests_processing"] == 4
        assert opened == [200, 200, 200, 200]
        assert server_after["llamacpp:n_decode_total"] >= server_before["llamacpp:n_decode_total"]
    finally:
        for task in holders:
            task.cancel()
        await asyncio.gather(*holders, return_exceptions=True)
    await wait_for(lambda: busy_slots(http, llamacpp), lambda n: n == 0, timeout_s=10)
