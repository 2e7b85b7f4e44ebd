"""Replicas served by real uvicorn servers on 127.0.0.1 at high simulated speed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx2 as httpx
import orjson
import pytest

from loadtests.sim.clock import RealClock
from loadtests.sim.profile import load_profile
from loadtests.sim.replica import EngineKind, Replica, build_replica
from loadtests.sim.server import bind, make_server, wait_started

MODEL = "Qwen/Qwen2.5-1.5B-Instruct"


@dataclass
class Running:
    replica: Replica
    client: httpx.AsyncClient


async def _serve(kind: EngineKind, speed: float) -> AsyncIterator[Running]:
    replica = build_replica(
        load_profile("qwen2.5-1.5b-h100"), kind=kind, served_model=MODEL, clock=RealClock(speed)
    )
    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    server = make_server(replica)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    await wait_started([server], [task])
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
        yield Running(replica, client)
    server.should_exit = True
    await task


@pytest.fixture
async def vllm() -> AsyncIterator[Running]:
    async for r in _serve("vllm", 200.0):
        yield r


@pytest.fixture
async def tgi() -> AsyncIterator[Running]:
    async for r in _serve("tgi", 200.0):
        yield r


def _chat(content: str, **extra: object) -> dict[str, object]:
    return {"model": MODEL, "messages": [{"role": "user", "content": content}], **extra}


def _sse_events(raw: str) -> list[str]:
    return [
        line.removeprefix("data:").strip() for line in raw.split("\n") if line.startswith("data:")
    ]


async def test_chat_completion_shape_usage_and_determinism(vllm: Running) -> None:
    body = _chat("Tell me about queues.", max_tokens=12, ignore_eos=True, seed=3)
    first = (await vllm.client.post("/v1/chat/completions", json=body)).json()
    second = (await vllm.client.post("/v1/chat/completions", json=body)).json()
    other = (await vllm.client.post("/v1/chat/completions", json={**body, "seed": 4})).json()
    assert first["object"] == "chat.completion"
    assert first["model"] == MODEL
    choice = first["choices"][0]
    assert choice["message"]["role"] == "assistant"
    assert choice["finish_reason"] == "length"
    assert choice["message"]["content"] == second["choices"][0]["message"]["content"]
    assert choice["message"]["content"] != other["choices"][0]["message"]["content"]
    usage = first["usage"]
    assert usage["completion_tokens"] == 12
    assert usage["total_tokens"] == usage["prompt_tokens"] + 12


async def test_cached_tokens_reported_for_shared_prefix(vllm: Running) -> None:
    system = "You are a helpful assistant. " * 20
    body = _chat(system, max_tokens=2)
    await vllm.client.post("/v1/chat/completions", json=body)
    usage = (await vllm.client.post("/v1/chat/completions", json=body)).json()["usage"]
    cached = usage["prompt_tokens_details"]["cached_tokens"]
    assert cached > 0
    assert cached % 16 == 0


async def test_streaming_chunks_and_usage(vllm: Running) -> None:
    body = _chat("stream please", max_tokens=5, ignore_eos=True, stream=True,
                 stream_options={"include_usage": True})  # fmt: skip
    resp = await vllm.client.post("/v1/chat/completions", json=body)
    assert resp.headers["content-type"].startswith("text/event-stream")
    events = _sse_events(resp.text)
    assert events[-1] == "[DONE]"
    chunks = [orjson.loads(e) for e in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    assert chunks[-2]["choices"][0]["finish_reason"] == "length"
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"]["completion_tokens"] == 5
    plain = await vllm.client.post("/v1/chat/completions", json={**body, "stream": False})
    assert plain.json()["choices"][0]["message"]["content"] == text


async def test_text_completion_models_and_errors(vllm: Running) -> None:
    body = {"model": MODEL, "prompt": "Once upon", "max_tokens": 3, "ignore_eos": True}
    out = (await vllm.client.post("/v1/completions", json=body)).json()
    assert out["object"] == "text_completion"
    assert out["usage"]["completion_tokens"] == 3
    models = (await vllm.client.get("/v1/models")).json()
    assert models["data"][0]["id"] == MODEL
    missing = await vllm.client.post("/v1/completions", json={**body, "model": "nope"})
    assert missing.status_code == 404
    too_long = await vllm.client.post("/v1/completions", json={**body, "max_tokens": 10**6})
    assert too_long.status_code == 400
    assert "error" in too_long.json()
    assert (await vllm.client.get("/health")).status_code == 200


async def test_metrics_use_vllm_names(vllm: Running) -> None:
    await vllm.client.post("/v1/chat/completions", json=_chat("hi", max_tokens=3))
    text = (await vllm.client.get("/metrics")).text
    for name in (
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
        "vllm:kv_cache_usage_perc",
        "vllm:prefix_cache_queries_total",
        "vllm:prefix_cache_hits_total",
        "vllm:num_preemptions_total",
        "vllm:time_to_first_token_seconds_bucket",
        "vllm:inter_token_latency_seconds_bucket",
    ):
        assert f"\n{name}{{" in text, name
    assert f'model_name="{MODEL}"' in text


async def test_client_disconnect_mid_stream_aborts(vllm: Running) -> None:
    engine, driver = vllm.replica.engine, vllm.replica.driver
    body = _chat("long one", max_tokens=20_000, ignore_eos=True, stream=True)
    async with vllm.client.stream("POST", "/v1/chat/completions", json=body) as resp:
        async for _ in resp.aiter_bytes():
            break
        assert engine.num_running == 1
    await asyncio.wait_for(driver.wait_until(lambda: engine.counters.aborts == 1), 5)
    await asyncio.wait_for(driver.wait_until(lambda: engine.num_running == 0), 5)
    assert engine.kv.usage() == 0.0
    metrics = (await vllm.client.get("/metrics")).text
    assert 'finished_reason="abort"' in metrics


async def test_tgi_generate_and_info(tgi: Running) -> None:
    body = {"inputs": "What is TGI?", "parameters": {"max_new_tokens": 6, "details": True}}
    out = (await tgi.client.post("/generate", json=body)).json()
    assert isinstance(out["generated_text"], str)
    details = out["details"]
    assert details["generated_tokens"] == len(details["tokens"]) <= 6
    assert details["finish_reason"] in {"length", "eos_token"}
    assert set(details["tokens"][0]) == {"id", "text", "logprob", "special"}
    info = (await tgi.client.get("/info")).json()
    assert info["model_id"] == MODEL
    assert info["max_total_tokens"] > info["max_input_tokens"] > 0


async def test_tgi_generate_stream_events(tgi: Running) -> None:
    body = {"inputs": "Stream it", "parameters": {"max_new_tokens": 4}}
    resp = await tgi.client.post("/generate_stream", json=body)
    events = [orjson.loads(e) for e in _sse_events(resp.text)]
    assert 1 <= len(events) <= 4
    assert all(set(e["token"]) == {"id", "text", "logprob", "special"} for e in events)
    assert all(e["generated_text"] is None and e["details"] is None for e in events[:-1])
    last = events[-1]
    assert last["generated_text"] == "".join(e["token"]["text"] for e in events)
    assert last["details"]["generated_tokens"] == len(events)
    chat = await tgi.client.post("/v1/chat/completions", json=_chat("hi", max_tokens=2))
    assert chat.json()["object"] == "chat.completion"
    metrics = (await tgi.client.get("/metrics")).text
    for name in ("tgi_queue_size", "tgi_batch_current_size", "tgi_batch_current_max_tokens",
                 "tgi_request_duration_bucket", "tgi_request_queue_duration_bucket"):  # fmt: skip
        assert f"\n{name}" in metrics, name


def test_detokenize_inverts_tokenize_on_generated_text() -> None:
    from loadtests.sim import tokenizer

    text = "".join(tokenizer.generate("a prompt", 3, 40))
    assert tokenizer.decode(tokenizer.encode(text)) == text
    [unknown] = tokenizer.encode("zq")  # not a piece of generated text
    assert tokenizer.decode([unknown]) == f"<{unknown}>"


def test_embeddings_are_deterministic_unit_vectors() -> None:
    from loadtests.sim.vllm_extras import embedding, relevance

    first = embedding("a text")
    assert first == embedding("a text") != embedding("b text")
    assert len(first) == 64
    assert len(embedding("b text", 8)) == 8
    assert sum(v * v for v in first) == pytest.approx(1.0)
    assert relevance("is the cache fast", "the cache is fast") == 1.0
    assert relevance("cache", "queue") == 0.0


TOOL = {
    "type": "function",
    "function": {
        "name": "weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
            "additionalProperties": False,
        },
    },
}


async def test_without_a_limit_answers_end_at_their_natural_stop(vllm: Running) -> None:
    for i in range(8):  # natural lengths 16..512 tokens, cut at the profile's 256
        out = (await vllm.client.post("/v1/chat/completions", json=_chat(f"q{i}"))).json()
        assert out["choices"][0]["finish_reason"] == "stop"
        assert 16 <= out["usage"]["completion_tokens"] <= 256
        body = {"model": MODEL, "input": f"q{i}"}
        answer = (await vllm.client.post("/v1/responses", json=body)).json()
        assert (answer["status"], answer["incomplete_details"]) == ("completed", None)
    limited = {"model": MODEL, "input": "q", "max_output_tokens": 3}
    cut = (await vllm.client.post("/v1/responses", json=limited)).json()
    assert (cut["status"], cut["incomplete_details"]) == (
        "incomplete",
        {"reason": "max_output_tokens"},
    )


async def test_a_streamed_tool_call_names_the_function_then_sends_its_arguments(
    vllm: Running,
) -> None:
    body = _chat("weather?", tools=[TOOL], stream=True, stream_options={"include_usage": True})
    events = _sse_events((await vllm.client.post("/v1/chat/completions", json=body)).text)
    chunks = [orjson.loads(e) for e in events[:-1]]
    calls = [c["choices"][0]["delta"]["tool_calls"][0] for c in chunks[1:-1]]
    assert calls[0]["function"]["name"] == "weather"
    assert calls[0]["type"] == "function"
    assert all("name" not in call["function"] for call in calls[1:])
    arguments = "".join(call["function"]["arguments"] for call in calls)
    assert set(orjson.loads(arguments)) == {"city"}
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert chunks[-1]["usage"]["completion_tokens"] == len(calls)  # a piece a token
    whole = (await vllm.client.post("/v1/chat/completions", json={**body, "stream": False})).json()
    message = whole["choices"][0]["message"]
    assert message["content"] is None
    assert message["tool_calls"][0]["function"]["arguments"] == arguments
    assert whole["choices"][0]["finish_reason"] == "tool_calls"


async def test_a_responses_function_call_streams_its_arguments(vllm: Running) -> None:
    tool = {"type": "function", "name": "weather", "parameters": TOOL["function"]["parameters"]}
    body = {"model": MODEL, "input": "weather?", "tools": [tool], "stream": True}
    raw = (await vllm.client.post("/v1/responses", json=body)).text
    events = [orjson.loads(e) for e in _sse_events(raw)]
    kinds = [e["type"] for e in events]
    assert kinds[:3] == ["response.created", "response.in_progress", "response.output_item.added"]
    assert kinds[-3:] == [
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    deltas = "".join(e["delta"] for e in events if e["type"].endswith("arguments.delta"))
    final = events[-1]["response"]
    [item] = final["output"]
    assert (item["type"], item["name"], item["arguments"]) == ("function_call", "weather", deltas)
    assert final["usage"]["output_tokens"] == len(kinds) - 6  # one delta per token here
