"""Checks both real-backend suites share (llama.cpp's and vLLM's): requests through the
gateway with the OpenAI SDK and raw HTTP, and the gateway's own counters."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx2 as httpx
import openai
import orjson

from loadtests.real.predictor import Plan, measure
from loadtests.real.predictor_table import errors, measured
from loadtests.real.probe import metrics, wait_for
from loadtests.real.prompts import filler

CHAT = "/v1/chat/completions"
PUBLIC = "gemma"
# A long generation that only a cancellation stops early.
LONG: dict[str, Any] = {"max_tokens": 400, "ignore_eos": True}
QUEUE_DEPTH = 'gateway_queue_depth{lane="short",pool="cpu",priority="standard"}'
# Only the timestamp changes between requests, and it opens the system prompt.
SYSTEM = "Current time: {now}. You are the support assistant of a hardware shop. " + " ".join(
    f"Rule {i}: answer politely, cite the order number and stay brief." for i in range(60)
)


def chat_body(content: str, **extra: Any) -> dict[str, Any]:
    return {"model": PUBLIC, "messages": [{"role": "user", "content": content}], **extra}


def check_chat_and_completions(client: openai.OpenAI) -> None:
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


def check_streaming(client: openai.OpenAI) -> None:
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


async def cancellations(http: httpx.AsyncClient, gateway: str, phase: str) -> float:
    found = await metrics(http, gateway)
    return found.get(f'gateway_cancellations_total{{phase="{phase}"}}', 0.0)


async def leave_during(
    body: dict[str, Any],
    gateway: str,
    reached: Callable[[], Awaitable[bool]],
    *,
    poll_s: float = 0.05,
) -> None:
    """Send ``body`` (streamed or not) on a raw connection, wait until the server is in the
    phase ``reached`` tells, then close the connection: a client that leaves."""
    host, port = gateway.removeprefix("http://").split(":")
    _, writer = await asyncio.open_connection(host, int(port))
    payload = orjson.dumps(body)
    head = (
        f"POST {CHAT} HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(payload)}\r\n\r\n"
    )
    writer.write(head.encode() + payload)
    await writer.drain()
    try:
        await wait_for(reached, bool, timeout_s=60, poll_s=poll_s)
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


async def leave_after_first_token(http: httpx.AsyncClient, gateway: str) -> None:
    """Stream a long answer and leave once a chunk carries text: vLLM's first chunk has the
    role and an empty content, which comes before the first token."""
    body = chat_body(filler(20), stream=True, **LONG)
    async with http.stream("POST", gateway + CHAT, json=body) as response:
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if not line.startswith("data: {"):
                continue
            choices = orjson.loads(line[6:]).get("choices") or [{}]
            if choices[0].get("delta", {}).get("content"):
                return


async def first_token_s(
    http: httpx.AsyncClient, gateway: str, system: str, **headers: str
) -> float:
    """Time to the first token of a short streamed answer, read to its end (a request its
    client leaves is aborted, and vLLM then keeps none of its blocks for later prefixes)."""
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
    first = 0.0
    async with http.stream("POST", gateway + CHAT, json=body, headers=headers) as response:
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if not first and '"content":"' in line.replace(" ", ""):
                first = time.monotonic() - start
    assert first, "no token"
    return first


async def prefix_reuse(
    http: httpx.AsyncClient,
    gateway: str,
    nonce: str,
    counters: Callable[[], Awaitable[tuple[float, float]]],
    *,
    warm: int = 1,
) -> tuple[float, float, float, float]:
    """Two series of ``warm`` + 1 requests whose system prompts differ only in their leading
    timestamp: first as sent (``x-gateway-rewrite: off``), then rewritten. ``counters`` reads the
    server's (prompt tokens reused, prompt tokens seen) counters; vLLM publishes them a
    little after the answer, so each read waits until the request was seen. Returns (tokens
    reused, time to first token) of the last request of each series: raw, then rewritten."""
    system = nonce + " " + SYSTEM

    def stamped(minute: int) -> str:
        return system.format(now=f"2026-11-22T01:{minute:02d}:07Z")

    async def settled(after: float) -> tuple[float, float]:
        found: list[tuple[float, float]] = []

        async def read() -> tuple[float, float]:
            found.append(await counters())
            return found[-1]

        await wait_for(read, lambda c: c[1] > after, timeout_s=15, poll_s=0.2)
        return found[-1]

    results: list[float] = []
    seen = (await counters())[1]
    for minute, headers in ((10, {"x-gateway-rewrite": "off"}), (20, {})):
        for i in range(warm):
            await first_token_s(http, gateway, stamped(minute + i), **headers)
        reused, seen = await settled(seen)
        seconds = await first_token_s(http, gateway, stamped(minute + warm), **headers)
        now_reused, seen = await settled(seen)
        results += [now_reused - reused, seconds]
    raw_reused, raw_s, rewritten_reused, rewritten_s = results
    return raw_reused, raw_s, rewritten_reused, rewritten_s


async def fill_queue_then_shed(
    http: httpx.AsyncClient, gateway: str, holders: list[asyncio.Task[None]]
) -> asyncio.Task[None]:
    """With the pool's slots held by ``holders``: one more request waits in the gateway's
    queue (returned, still waiting), two more find the queue full and get a fast 503
    (``queue_full``, a pool's refusal; 429 is a tenant's own limit) with ``Retry-After``."""
    queued = asyncio.create_task(hold(http, gateway, []))
    await wait_for(lambda: metrics(http, gateway), lambda m: m[QUEUE_DEPTH] == 1, timeout_s=5)
    for _ in range(2):
        start = time.monotonic()
        refused = await http.post(gateway + CHAT, json=chat_body("hi", max_tokens=4))
        assert refused.status_code == 503
        assert refused.json()["error"]["code"] == "queue_full"
        assert int(refused.headers["retry-after"]) >= 1
        assert time.monotonic() - start < 1.0
    return queued


async def hold(
    http: httpx.AsyncClient, gateway: str, opened: list[int], model: str = PUBLIC
) -> None:
    """A long stream, read to its end (or until cancelled)."""
    body = {**chat_body(filler(10), stream=True, **LONG), "model": model}
    async with http.stream("POST", gateway + CHAT, json=body) as response:
        opened.append(response.status_code)
        async for _ in response.aiter_raw():
            pass


async def leave_queue(http: httpx.AsyncClient, gateway: str, queued: asyncio.Task[None]) -> None:
    queued.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await queued
    await wait_for(lambda: metrics(http, gateway), lambda m: m[QUEUE_DEPTH] == 0, timeout_s=5)
    assert await cancellations(http, gateway, "queued") == 1


async def stop_all(tasks: list[asyncio.Task[None]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


# The predictor's check, short: 1, 2 and 4 clients with 16- and 384-word prompts, one warm-up
# pass and one measured pass of one request per client and cell (28 requests).
PREDICTOR_PLAN = Plan(lengths=(("short", 16), ("long", 384)), rounds=1, passes=1)


async def check_predictor_learns(url: str, engine: str) -> None:
    """Through a gateway with no objective: every request is served, predicted and observed
    (in its access-log line; in the error histogram when the prediction rested on the
    replica's observations, as it did for some after the warm-up pass), and after it the
    learned predictor's root-mean-square error (what its regression minimises) is below the
    prior's on the same requests (the prior predicts from the same inputs; which is larger
    depends on how the engine behaves, not on how fast the machine is). Medians of 14
    requests are too noisy on a shared machine to compare."""
    run = await measure(url, engine, PREDICTOR_PLAN)
    assert len(run.samples) == PREDICTOR_PLAN.requests() == 28
    assert [s.status for s in run.samples] == [200] * 28
    for s in run.samples:
        assert min(s.observed_s or 0, s.predicted_s or 0, s.prior_s or 0) > 0, s
    assert run.error_count == sum(s.supported for s in run.samples)
    after = measured(run)
    assert len(after) == 14
    assert any(s.supported for s in after)
    pooled = errors(after, "all")
    assert pooled.rms_ms < pooled.prior_rms_ms, pooled
