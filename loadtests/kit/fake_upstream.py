"""A fast fake OpenAI-compatible server for tests and the overhead benchmark.

It answers chat and completions requests (streaming or not) after a fixed time to first token,
then ``tokens`` tokens ``itl_s`` apart. A request can ask for misbehaviour through an extra
body field ``fake`` (the gateway passes unknown fields through):
``{"status": 500, "body": "..."}`` answer that status and body; ``{"hang_after_headers":
true}`` send the head and a comment, then nothing; ``{"break_after": n}`` drop
the connection after n events; ``{"bad_json_after": n}`` send a non-JSON event; ``{"no_done":
true}`` end the stream without ``[DONE]``; ``{"hang": true}`` never answer; ``{"ttft_s",
"tokens", "itl_s"}`` override the timing; ``{"content": "..."}`` answer (non-streaming) with
this text. ``FakeConfig.content`` does the same for every request, for requests a test cannot
add fields to (the gateway's own summary requests).
"""

from __future__ import annotations

import argparse
import asyncio
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route


@dataclass
class FakeConfig:
    model: str = "fake-model"
    ttft_s: float = 0.02
    tokens: int = 20
    itl_s: float = 0.005
    # Answer every generation request with this status (a broken replica).
    fail_status: int | None = None
    # The whole text of every non-streaming answer (instead of " tok0 tok1 ...").
    content: str | None = None
    # How answers end: "length" (the token budget ran out) or "stop" (a cacheable answer).
    finish_reason: str = "length"
    # Drop the connection halfway through every non-streaming answer (a replica that dies).
    break_whole: bool = False


@dataclass
class FakeLog:
    """What the fake saw: request bodies and headers, and requests the client abandoned.

    The events let a test in another thread wait for "a request arrived" and "a client left"
    without sleeping.
    """

    bodies: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    cancelled: int = 0
    arrived: threading.Event = field(default_factory=threading.Event)
    left: threading.Event = field(default_factory=threading.Event)
    # time.monotonic() of each cancel, in order (the cancellation benchmark's delays).
    left_times: list[float] = field(default_factory=list)

    def record_cancel(self) -> None:
        self.left_times.append(time.monotonic())
        self.cancelled += 1
        self.left.set()


class _Broken(Exception):
    """Raised inside a stream so the server drops the connection mid-body."""


def build_fake(config: FakeConfig | None = None, log: FakeLog | None = None) -> Starlette:
    cfg = config or FakeConfig()
    seen = log if log is not None else FakeLog()

    async def generate(request: Request) -> Response:
        body = orjson.loads(await request.body())
        seen.bodies.append(body)
        seen.headers.append(dict(request.headers))
        seen.arrived.set()
        chat = request.url.path.endswith("chat/completions")
        if body.get("stream"):
            return await _answer(cfg, seen, body, chat)
        # Starlette does not watch for disconnects while a handler runs; do it here.
        answer = asyncio.ensure_future(_answer(cfg, seen, body, chat))
        gone = asyncio.ensure_future(_disconnected(request))
        await asyncio.wait([answer, gone], return_when=asyncio.FIRST_COMPLETED)
        if answer.done():
            gone.cancel()
            return answer.result()
        answer.cancel()
        seen.record_cancel()
        return Response(b"", 499)

    async def models(request: Request) -> Response:
        data = {"object": "list", "data": [{"id": cfg.model, "object": "model", "created": 0}]}
        return Response(orjson.dumps(data), media_type="application/json")

    async def health(request: Request) -> Response:
        return Response(b"", 200)

    app = Starlette(
        routes=[
            Route("/v1/chat/completions", generate, methods=["POST"]),
            Route("/v1/completions", generate, methods=["POST"]),
            # Only to fail (``fail_status``, ``fake.status``): a broken replica of any kind.
            Route("/v1/responses", generate, methods=["POST"]),
            Route("/v1/embeddings", generate, methods=["POST"]),
            Route("/v1/models", models),
            Route("/health", health),
        ]
    )
    app.state.log = seen
    return app


async def _answer(cfg: FakeConfig, log: FakeLog, body: dict[str, Any], chat: bool) -> Response:
    fake: dict[str, Any] = body.get("fake") or {}
    if cfg.fail_status is not None:
        return Response(b'{"error": {"message": "broken replica"}}', cfg.fail_status)
    if fake.get("hang"):
        await asyncio.sleep(3600)
    if "status" in fake:
        return Response(str(fake.get("body", "")).encode(), int(fake["status"]))
    ttft = float(fake.get("ttft_s", cfg.ttft_s))
    tokens = int(fake.get("tokens", body.get("max_tokens") or cfg.tokens))
    tokens = min(tokens, int(fake.get("tokens", cfg.tokens)))
    itl = float(fake.get("itl_s", cfg.itl_s))
    model = str(body.get("model", cfg.model))
    finish = str(fake.get("finish_reason", cfg.finish_reason))
    if body.get("stream"):
        events = _stream(log, fake, model, chat, ttft, tokens, itl, body, finish)
        return StreamingResponse(events, media_type="text/event-stream")
    await asyncio.sleep(ttft + itl * max(0, tokens - 1))
    text = "".join(_word(i) for i in range(tokens))
    scripted = fake.get("content", cfg.content)
    if scripted is not None:
        text = str(scripted)
    answer = orjson.dumps(_whole(model, chat, text, tokens, finish))
    if cfg.break_whole:
        return StreamingResponse(_half_then_break(answer), media_type="application/json")
    return Response(answer, media_type="application/json")


async def _half_then_break(answer: bytes) -> AsyncIterator[bytes]:
    yield answer[: len(answer) // 2]
    raise _Broken


async def _stream(
    log: FakeLog,
    fake: dict[str, Any],
    model: str,
    chat: bool,
    ttft: float,
    tokens: int,
    itl: float,
    body: dict[str, Any],
    finish: str = "length",
) -> AsyncIterator[bytes]:
    created = int(time.time())
    try:
        if fake.get("hang_after_headers"):
            yield b": connected\n\n"
            await asyncio.sleep(3600)
        await asyncio.sleep(ttft)
        for i in range(tokens):
            if i == fake.get("break_after"):
                raise _Broken
            if i == fake.get("bad_json_after"):
                yield b"data: {not json\n\n"
            if i:
                await asyncio.sleep(itl)
            last = i == tokens - 1
            yield _event(_chunk(model, chat, _word(i), created, finish if last else None))
        if (body.get("stream_options") or {}).get("include_usage"):
            usage = {"prompt_tokens": 5, "completion_tokens": tokens, "total_tokens": 5 + tokens}
            yield _event(
                {**_chunk(model, chat, None, created, None), "choices": [], "usage": usage}
            )
        if not fake.get("no_done"):
            yield b"data: [DONE]\n\n"
    except asyncio.CancelledError:
        log.record_cancel()
        raise


async def _disconnected(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass


def _word(i: int) -> str:
    return f" tok{i}"


def _event(obj: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(obj) + b"\n\n"


def _chunk(
    model: str, chat: bool, text: str | None, created: int, finish: str | None
) -> dict[str, Any]:
    if chat:
        delta = {"content": text} if text is not None else {}
        choice: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": finish}
        kind = "chat.completion.chunk"
    else:
        choice = {"index": 0, "text": text or "", "finish_reason": finish}
        kind = "text_completion"
    return {"id": "fake-1", "object": kind, "created": created, "model": model, "choices": [choice]}


def _whole(
    model: str, chat: bool, text: str, tokens: int, finish: str = "length"
) -> dict[str, Any]:
    if chat:
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "finish_reason": finish,
        }
        kind = "chat.completion"
    else:
        choice = {"index": 0, "text": text, "finish_reason": finish}
        kind = "text_completion"
    usage = {"prompt_tokens": 5, "completion_tokens": tokens, "total_tokens": 5 + tokens}
    return {
        "id": "fake-1",
        "object": kind,
        "created": 0,
        "model": model,
        "choices": [choice],
        "usage": usage,
    }


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description="fake OpenAI-compatible upstream")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9001)
    parser.add_argument("--model", default="fake-model")
    parser.add_argument("--ttft-ms", type=float, default=20.0)
    parser.add_argument("--tokens", type=int, default=20)
    parser.add_argument("--itl-ms", type=float, default=5.0)
    args = parser.parse_args()
    config = FakeConfig(args.model, args.ttft_ms / 1000, args.tokens, args.itl_ms / 1000)
    uvicorn.run(build_fake(config), host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
