"""Faults and continuations on a replica served by a real uvicorn server on 127.0.0.1.

Stalls are released by the test (the replica's ``pause`` is replaced by one that waits for
the test), deaths are read off the wire, continuations are compared with the uninterrupted
answer. State is awaited with ``until``, never with sleeps.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, NoReturn

import httpx2 as httpx
import orjson
import pytest

from loadtests.sim import tokenizer
from loadtests.sim.clock import RealClock
from loadtests.sim.faults import EXIT_STATUS, Death, Faults, Stall
from loadtests.sim.generation import chat_prompt
from loadtests.sim.profile import NaturalStop
from loadtests.sim.replica import EngineKind, Replica, build_replica
from loadtests.sim.server import bind, make_server, wait_started
from tests.support.waiting import until

from .conftest import make_profile

MODEL = "sim/faults"
MESSAGES = [{"role": "user", "content": "Tell me about queues."}]
STOP = NaturalStop(min_tokens=30, max_tokens=30)  # every answer is 30 tokens unless capped


class Exited(Exception):
    pass


@dataclass
class Gate:
    """A ``pause`` the test releases; it records the stalls asked for."""

    asked: list[float] = field(default_factory=list)
    open: asyncio.Event = field(default_factory=asyncio.Event)

    async def pause(self, seconds: float) -> None:
        self.asked.append(seconds)
        await self.open.wait()


@dataclass
class Running:
    replica: Replica
    client: httpx.AsyncClient
    gate: Gate
    exits: list[int]

    def idle(self) -> bool:
        e = self.replica.engine
        return e.num_running + e.num_waiting == 0


@contextlib.asynccontextmanager
async def serving(faults: Faults, kind: EngineKind = "vllm") -> AsyncIterator[Running]:
    replica = build_replica(make_profile(natural_stop=STOP), kind=kind, served_model=MODEL,
                            clock=RealClock(200.0), name="r-0", faults=faults)  # fmt: skip
    gate, exits = Gate(), []

    def fake_exit(status: int) -> NoReturn:
        exits.append(status)
        raise Exited

    replica.faults.pause = gate.pause
    replica.faults.exit = fake_exit
    sock = bind("127.0.0.1", 0)
    server = make_server(replica)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    await wait_started([server], [task])
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    async with httpx.AsyncClient(base_url=url, timeout=10) as client:
        yield Running(replica, client, gate, exits)
    server.should_exit = True
    await task


@pytest.fixture
async def plain() -> AsyncIterator[Running]:
    async with serving(Faults()) as r:
        yield r


def _chat(messages: list[dict[str, str]] | None = None, **extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "messages": messages or MESSAGES, "seed": 5, **extra}


def expected(prompt: str, n: int = 30) -> list[str]:
    return list(tokenizer.generate(prompt, 5, n))


@dataclass
class Streamed:
    text: str = ""
    done: bool = False
    usage: dict[str, int] | None = None
    broken: str | None = None


async def _stream(client: httpx.AsyncClient, path: str, body: dict[str, Any]) -> Streamed:
    out = Streamed()
    body = {**body, "stream": True, "stream_options": {"include_usage": True}}
    try:
        async with client.stream("POST", path, json=body) as response:
            assert response.status_code == 200
            async for line in response.aiter_lines():
                if line == "data: [DONE]":
                    out.done = True
                elif line.startswith("data: "):
                    event = orjson.loads(line[6:])
                    for choice in event.get("choices") or []:
                        out.text += (choice.get("delta") or {}).get("content") or ""
                        out.text += choice.get("text") or ""
                    out.usage = event.get("usage") or out.usage
    except httpx.RemoteProtocolError as exc:
        out.broken = type(exc).__name__
    return out


async def test_chat_continuation_is_the_rest_of_the_uninterrupted_answer(plain: Running) -> None:
    whole = await _stream(plain.client, "/v1/chat/completions", _chat())
    pieces = expected(chat_prompt(MESSAGES))
    assert whole.text == "".join(pieces)
    for k in (1, 10, 29):
        partial = "".join(pieces[:k])
        body = _chat([*MESSAGES, {"role": "assistant", "content": partial}], max_tokens=30 - k,
                     continue_final_message=True, add_generation_prompt=False)  # fmt: skip
        rest = await _stream(plain.client, "/v1/chat/completions", body)
        assert (partial + rest.text, rest.done) == (whole.text, True)
        assert rest.usage is not None
        assert rest.usage["completion_tokens"] == 30 - k
        prompt = chat_prompt(MESSAGES) + partial
        assert rest.usage["prompt_tokens"] == len(tokenizer.encode(prompt))
    assert plain.replica.faults.counts.continuations == 3


async def test_without_the_flags_or_with_a_wrong_partial_it_answers_anew(plain: Running) -> None:
    pieces = expected(chat_prompt(MESSAGES))
    partial = "".join(pieces[:10])
    turn = [*MESSAGES, {"role": "assistant", "content": partial}]
    closed = await _stream(plain.client, "/v1/chat/completions", _chat(turn))
    assert closed.text == "".join(expected(chat_prompt(turn)))
    assert len(pieces[3]) > 3  # a word: cut inside, it is not the start of the model's answer
    wrong = "".join(pieces[:4])[:-1]
    body = _chat([*MESSAGES, {"role": "assistant", "content": wrong}],
                 continue_final_message=True, add_generation_prompt=False)  # fmt: skip
    fresh = await _stream(plain.client, "/v1/chat/completions", body)
    assert fresh.text == "".join(expected(chat_prompt(MESSAGES) + wrong))
    assert plain.replica.faults.counts.continuations == 0
    refused = await plain.client.post(
        "/v1/chat/completions", json=_chat(turn, continue_final_message=True)
    )
    assert refused.status_code == 400
    assert "add_generation_prompt" in refused.json()["error"]["message"]


async def test_text_completion_of_prompt_plus_partial_continues(plain: Running) -> None:
    prompt = "The queue holds"
    whole = await _stream(plain.client, "/v1/completions", {"model": MODEL, "prompt": prompt,
                                                             "seed": 5})  # fmt: skip
    assert whole.text == "".join(expected(prompt))
    partial = "".join(expected(prompt)[:12])
    body = {"model": MODEL, "prompt": prompt + partial, "seed": 5, "max_tokens": 18}
    rest = (await plain.client.post("/v1/completions", json=body)).json()
    assert partial + rest["choices"][0]["text"] == whole.text
    assert rest["choices"][0]["finish_reason"] == "stop"  # where the original stopped
    assert rest["usage"]["completion_tokens"] == 18


async def test_a_tgi_replica_ignores_continue_final_message() -> None:
    async with serving(Faults(), kind="tgi") as r:
        partial = "".join(expected(chat_prompt(MESSAGES))[:5])
        turn = [*MESSAGES, {"role": "assistant", "content": partial}]
        body = _chat(turn, continue_final_message=True, add_generation_prompt=False)
        out = await _stream(r.client, "/v1/chat/completions", body)
        assert out.text == "".join(expected(chat_prompt(turn)))


async def test_a_stall_holds_the_request_out_of_the_engine_until_it_ends() -> None:
    async with serving(Faults(stall=Stall(rate=1.0, seconds=2.5))) as r:
        task = asyncio.create_task(_stream(r.client, "/v1/chat/completions", _chat()))
        await until(lambda: r.gate.asked == [2.5])
        assert r.idle()
        assert r.replica.faults.counts.stalls == 1
        r.gate.open.set()
        out = await task
        assert (out.text, out.done) == ("".join(expected(chat_prompt(MESSAGES))), True)
        metrics = (await r.client.get("/metrics")).text
        assert "sim_requests_total 1.0" in metrics
        assert "sim_stalls_total 1.0" in metrics


async def test_a_request_stalled_forever_leaves_with_its_client() -> None:
    async with serving(Faults(stall=Stall(rate=1.0, seconds="never"))) as r:
        task = asyncio.create_task(_stream(r.client, "/v1/chat/completions", _chat()))
        await until(lambda: r.replica.faults.counts.stalls == 1)
        assert r.gate.asked == []  # never: nothing to wait out
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        # The engine never saw it: no request finished or aborted there.
        metrics = (await r.client.get("/metrics")).text
        assert (
            'vllm:request_success_total{finished_reason="abort",model_name="sim/faults"} 0.0'
            in (metrics)
        )
        assert r.idle()


@pytest.mark.parametrize(("after", "path"), [(0, "/v1/chat/completions"),
                                             (10, "/v1/chat/completions"),
                                             (10, "/v1/completions")])  # fmt: skip
async def test_a_cut_stream_ends_without_terminator_after_its_tokens(after: int, path: str) -> None:
    async with serving(Faults(death=Death(rate=1.0, after_tokens=after))) as r:
        body = _chat() if path.endswith("chat/completions") else {
            "model": MODEL, "prompt": "The queue holds", "seed": 5}  # fmt: skip
        prompt = chat_prompt(MESSAGES) if "chat" in path else "The queue holds"
        out = await _stream(r.client, path, body)
        assert (out.text, out.done, out.usage) == ("".join(expected(prompt)[:after]), False, None)
        assert out.broken == "RemoteProtocolError"
        assert r.replica.faults.counts.deaths["cut"] == 1
        await until(r.idle)


async def test_a_stream_shorter_than_its_death_ends_cleanly() -> None:
    async with serving(Faults(death=Death(rate=1.0, after_tokens=30))) as r:
        out = await _stream(r.client, "/v1/chat/completions", _chat())
        assert (out.done, out.broken) == (True, None)
        assert r.replica.faults.counts.deaths["cut"] == 0


async def test_a_hung_stream_sends_nothing_more_until_its_client_leaves() -> None:
    async with serving(Faults(death=Death(rate=1.0, after_tokens=3, mode="hang"))) as r:
        seen: list[str] = []

        async def read() -> None:
            body = {**_chat(), "stream": True}
            async with r.client.stream("POST", "/v1/chat/completions", json=body) as response:
                async for line in response.aiter_lines():
                    if line.startswith("data: {"):
                        delta = orjson.loads(line[6:])["choices"][0]["delta"]
                        seen.append(delta.get("content") or "")

        task = asyncio.create_task(read())
        await until(lambda: len([c for c in seen if c]) == 3)
        assert r.replica.faults.counts.deaths["hang"] == 1
        assert not task.done()  # the stream stays open, silent
        assert "".join(seen) == "".join(expected(chat_prompt(MESSAGES))[:3])
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await until(r.idle)


async def test_an_exit_death_ends_the_process() -> None:
    async with serving(Faults(death=Death(rate=1.0, after_tokens=2, mode="exit"))) as r:
        out = await _stream(r.client, "/v1/chat/completions", _chat())
        assert r.exits == [EXIT_STATUS]
        assert (out.done, out.broken) == (False, "RemoteProtocolError")
