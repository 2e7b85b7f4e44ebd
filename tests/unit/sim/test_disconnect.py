"""A client disconnect aborts its engine sequence at once, on every route and in every phase.

Replicas run on real uvicorn servers on 127.0.0.1 with a slow profile (10 ms steps, 16-token
prefill chunks, one sequence at a time), so a request can be caught waiting, prefilling or
decoding. Streaming tests force ASGI spec 2.4 into the scope, where Starlette's own
``StreamingResponse`` would not listen for ``http.disconnect``; one set runs on uvicorn's
own spec version. State is awaited with ``EngineDriver.wait_until``, never with sleeps.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Literal

import httpx2 as httpx
import pytest
import uvicorn
from starlette.types import ASGIApp, Receive, Scope, Send

from loadtests.sim.clock import RealClock
from loadtests.sim.driver import EngineDriver
from loadtests.sim.engine import Engine, EngineRequest
from loadtests.sim.profile import NaturalStop, Profile, StepTime
from loadtests.sim.replica import EngineKind, Replica, build_replica
from loadtests.sim.server import ReplicaServer, bind, build_app, wait_started

from .conftest import make_profile, tokens

MODEL = "sim/slow"
WAIT_S = 5.0  # upper bound for a state change that should take milliseconds
MAX_TOKENS = 10_000  # ~100 s of decoding: a missed abort cannot end by itself in time
LONG_PROMPT = "slow " * 600  # ~600 tokens: ~38 prefill steps, ~0.4 s
SHORT_PROMPT = "hi"

Phase = Literal["waiting", "prefill", "decode"]


@dataclass
class Running:
    replica: Replica
    client: httpx.AsyncClient

    @property
    def engine(self) -> Engine:
        return self.replica.engine

    @property
    def driver(self) -> EngineDriver:
        return self.replica.driver

    async def until(self, predicate: Callable[[], bool]) -> None:
        await asyncio.wait_for(self.driver.wait_until(predicate), WAIT_S)

    def idle(self) -> bool:
        e = self.engine
        return e.num_running + e.num_waiting == 0 and e.kv.num_free == e.kv.num_blocks


def _slow_profile() -> Profile:
    step = StepTime(base_s=0.01, per_prefill_token_s=0.0, per_running_seq_s=0.0,
                    per_context_token_s=0.0)  # fmt: skip
    return make_profile(
        step_time=step,
        max_num_seqs=1,
        max_num_batched_tokens=16,
        max_model_len=16_384,
        num_kv_blocks=2_000,
        natural_stop=NaturalStop(min_tokens=MAX_TOKENS, max_tokens=MAX_TOKENS),
    )


def _with_spec(app: ASGIApp, spec: str | None) -> ASGIApp:
    """``app`` with HTTP scopes claiming ASGI ``spec`` (None: the server's own)."""
    if spec is None:
        return app

    async def forced(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope = {**scope, "asgi": {**scope.get("asgi", {}), "spec_version": spec}}
        await app(scope, receive, send)

    return forced


@contextlib.asynccontextmanager
async def _serve(kind: EngineKind, spec: str | None) -> AsyncIterator[Running]:
    replica = build_replica(_slow_profile(), kind=kind, served_model=MODEL, clock=RealClock())
    config = uvicorn.Config(
        _with_spec(build_app(replica), spec),
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=1,
    )
    server = ReplicaServer(config)
    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        await wait_started([server], [task])
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
            yield Running(replica, client)
    finally:
        server.should_exit = True
        await task


# route name -> (engine flavour, path, request body for a prompt)
ROUTES: dict[str, tuple[EngineKind, str, Callable[[str, bool], dict[str, Any]]]] = {
    "chat": (
        "vllm",
        "/v1/chat/completions",
        lambda prompt, stream: {
            "model": MODEL,
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": MAX_TOKENS,
            "ignore_eos": True,
            "stream": stream,
        },
    ),
    "completions": (
        "vllm",
        "/v1/completions",
        lambda prompt, stream: {
            "model": MODEL,
            "prompt": prompt,
            "max_tokens": MAX_TOKENS,
            "ignore_eos": True,
            "stream": stream,
        },
    ),
    "tgi_generate_stream": (
        "tgi",
        "/generate_stream",
        lambda prompt, _stream: {"inputs": prompt, "parameters": {"max_new_tokens": MAX_TOKENS}},
    ),
    "tgi_generate": (
        "tgi",
        "/generate",
        lambda prompt, _stream: {"inputs": prompt, "parameters": {"max_new_tokens": MAX_TOKENS}},
    ),
}
STREAMING = ["chat", "completions", "tgi_generate_stream"]


async def _drop_stream_in_phase(route: str, phase: Phase, spec: str | None) -> None:
    """Open a stream, close it (unread) once the request is in ``phase``; check the abort."""
    kind, path, body = ROUTES[route]
    async with _serve(kind, spec) as r:
        engine = r.engine
        if phase == "waiting":  # occupy the only slot so the request under test queues
            r.driver.submit(EngineRequest("blocker", tokens(0, 8), MAX_TOKENS))
            await r.until(lambda: engine.num_running == 1)
        free_before = engine.kv.num_free
        prompt = LONG_PROMPT if phase == "prefill" else SHORT_PROMPT
        in_phase: dict[Phase, Callable[[], bool]] = {
            "waiting": lambda: engine.num_waiting == 1,
            "prefill": lambda: engine.num_running == 1,
            "decode": lambda: engine.counters.generation_tokens >= 3,
        }
        async with r.client.stream("POST", path, json=body(prompt, True)) as resp:
            assert resp.status_code == 200
            assert resp.headers["content-type"].startswith("text/event-stream")
            await r.until(in_phase[phase])
            tokens_at_close = engine.counters.generation_tokens
        # Leaving the block closes the connection without reading a single chunk.
        await r.until(lambda: engine.counters.aborts == 1)
        assert engine.num_waiting == 0
        if phase == "waiting":
            assert engine.num_running == 1  # the blocker is untouched
            assert engine.kv.num_free == free_before
            assert r.driver.abort("blocker")
        else:
            assert engine.num_running == 0
        await r.until(r.idle)
        assert engine.counters.aborts == (2 if phase == "waiting" else 1)
        if phase == "prefill":
            assert tokens_at_close == engine.counters.generation_tokens == 0
        assert engine.counters.finished == 0


@pytest.mark.parametrize("phase", ["waiting", "prefill", "decode"])
@pytest.mark.parametrize("route", STREAMING)
async def test_stream_drop_aborts_at_once_on_asgi_2_4(route: str, phase: Phase) -> None:
    await _drop_stream_in_phase(route, phase, "2.4")


@pytest.mark.parametrize("route", STREAMING)
async def test_stream_drop_before_first_token_aborts_on_server_spec(route: str) -> None:
    await _drop_stream_in_phase(route, "prefill", None)


@pytest.mark.parametrize("route", ["chat", "tgi_generate"])
async def test_non_streaming_drop_aborts_at_once(route: str) -> None:
    kind, path, body = ROUTES[route]
    async with _serve(kind, None) as r:
        engine = r.engine
        post = asyncio.create_task(r.client.post(path, json=body(LONG_PROMPT, False)))
        await r.until(lambda: engine.num_running == 1)
        post.cancel()  # httpx closes the connection of a cancelled request
        await asyncio.wait({post})
        await r.until(lambda: engine.counters.aborts == 1)
        await r.until(r.idle)
        assert engine.counters.generation_tokens == 0
