"""A backend that quotes the key it got, in every way a leaky server could: a test serves it
with real uvicorn on 127.0.0.1 and checks that none of it reaches the gateway's client.

The request's ``quote`` field picks the answer: ``401`` (OpenAI's "Incorrect API key
provided: <key>"), ``401_masked`` (OpenAI's masked form, the key's tail visible), ``400``
(the key in message, param and code), ``500`` (plain text), ``429``, ``echo`` (a 200
answer whose text is the key); with ``stream: true``: ``echo`` (the key in a content delta)
or ``error`` (a chunk, then an error event quoting the key).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route


def _error(message: str, **fields: object) -> bytes:
    return orjson.dumps({"error": {"message": message, "type": "invalid_request_error", **fields}})


def _chunk(text: str) -> bytes:
    delta = {"id": "c1", "object": "chat.completion.chunk", "model": "m"}
    event = {**delta, "choices": [{"index": 0, "delta": {"content": text}}]}
    return b"data: " + orjson.dumps(event) + b"\n\n"


def _answers(key: str) -> dict[str, Response]:
    masked = f"{key[:8]}{'*' * 20}{key[-4:]}"
    return {
        "401": Response(_error(f"Incorrect API key provided: {key}."), 401),
        "401_masked": Response(_error(f"Incorrect API key provided: {masked}."), 401),
        "400": Response(_error(f"Key {key} may not ask this.", param=key, code=key), 400),
        "500": Response(f"Internal error while checking Bearer {key}".encode(), 500),
        "429": Response(_error(f"Too many requests for {masked}"), 429),
        "echo": Response(
            orjson.dumps(
                {
                    "id": "c1",
                    "object": "chat.completion",
                    "model": "m",
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": f"You sent {key}."},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 3, "completion_tokens": 3, "total_tokens": 6},
                }
            ),
            media_type="application/json",
        ),
    }


async def _stream(key: str, mode: str) -> AsyncIterator[bytes]:
    yield _chunk("Hello")
    if mode == "echo":
        yield _chunk(f" you sent {key}")
    else:
        yield b"data: " + _error(f"Engine failed for key {key}", code=500) + b"\n\n"
    yield b"data: [DONE]\n\n"


async def _generate(request: Request) -> Response:
    body = orjson.loads(await request.body())
    key = request.headers.get("authorization", "").removeprefix("Bearer ")
    mode = str(body.get("quote", "echo"))
    if body.get("stream"):
        return StreamingResponse(_stream(key, mode), media_type="text/event-stream")
    return _answers(key)[mode]


async def _health(request: Request) -> Response:
    return Response(b"", 200)


def quoting_backend() -> Starlette:
    return Starlette(
        routes=[
            Route("/v1/chat/completions", _generate, methods=["POST"]),
            Route("/health", _health),
        ]
    )
