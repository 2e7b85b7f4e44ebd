"""A tiny OpenAI-compatible streaming server for load-generator tests.

The request's ``model`` picks the behaviour: ``ok`` streams ``max_tokens`` chunks after
``ttft_s`` with ``itl_s`` between chunks; ``shed`` answers 429 with Retry-After; ``fail``
answers 500; ``broken`` drops the connection mid-stream; ``error-event`` streams an error
object; ``no-done`` ends without ``[DONE]``.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import orjson
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route


@dataclass(frozen=True)
class FakeConfig:
    ttft_s: float = 0.05
    itl_s: float = 0.005


def _chunk(payload: dict[str, object]) -> bytes:
    return b"data: " + orjson.dumps(payload) + b"\n\n"


def _delta(text: str) -> bytes:
    return _chunk({"choices": [{"index": 0, "delta": {"content": text}}]})


async def _tokens(config: FakeConfig, n: int, mode: str) -> AsyncIterator[bytes]:
    await asyncio.sleep(config.ttft_s)
    yield _chunk({"choices": [{"index": 0, "delta": {"role": "assistant"}}]})
    for i in range(n):
        if i:
            await asyncio.sleep(config.itl_s)
        yield _delta(f" t{i}")
        if mode == "broken" and i == 1:
            raise RuntimeError("upstream died")
        if mode == "error-event" and i == 1:
            yield b"event: error\n" + _chunk({"error": {"type": "engine_dead"}})
            return
    yield _chunk({"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": n}})
    if mode != "no-done":
        yield b"data: [DONE]\n\n"


def build_app(config: FakeConfig) -> Starlette:
    async def chat(request: Request) -> Response:
        body = orjson.loads(await request.body())
        mode = body["model"]
        if mode == "shed":
            return JSONResponse(
                {"error": {"type": "overloaded"}}, status_code=429, headers={"retry-after": "2"}
            )
        if mode == "fail":
            return Response(b"boom", status_code=500)
        headers = {"x-gateway-pool": "small", "x-other": "dropped"}
        stream = _tokens(config, int(body["max_tokens"]), mode)
        return StreamingResponse(stream, media_type="text/event-stream", headers=headers)

    async def metrics(request: Request) -> Response:
        text = 'vllm:num_requests_waiting{model="m"} 3\nvllm:num_requests_waiting{model="n"} 2\n'
        return Response(text, media_type="text/plain")

    return Starlette(
        routes=[
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/metrics", metrics),
        ]
    )


@contextmanager
def serve(config: FakeConfig) -> Iterator[str]:
    """Run the fake on 127.0.0.1 in a thread; yields its base URL.

    The socket is bound and listening before the thread starts, so clients can connect at
    once (the kernel queues them) and nothing has to poll for readiness.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(build_app(config), log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
