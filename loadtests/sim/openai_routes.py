"""vLLM's OpenAI-compatible routes: chat and text completions (streaming SSE or not), models
(the rest of vLLM's routes: ``vllm_extras.py``). A chat request with ``tools`` gets a tool
call, one with ``response_format`` JSON (``structured.py``), as a real engine's would.

Streaming sends one SSE chunk per engine step (as vLLM does), a final chunk carrying the
finish reason, a usage chunk when ``stream_options.include_usage`` is set, then ``[DONE]``.
A TGI replica serves these routes too and, as TGI does, for whatever model name is asked.

A vLLM replica honours ``continue_final_message: true`` (with ``add_generation_prompt:
false``): the last message is rendered open and the answer continues it (exactly, when it is
the start of this model's own answer: ``continuation.py``). A stream whose fate is to die
(``faults.py``) ends after its ``after_tokens``-th token: cut (the response is left
incomplete, so the server closes the connection without the chunked terminator), hung (no
more bytes until the client leaves) or with the whole process.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncGenerator, Callable
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from loadtests.sim import tokenizer
from loadtests.sim.continuation import continue_final_message
from loadtests.sim.driver import RequestAborted
from loadtests.sim.faults import EXIT_STATUS, StreamCut
from loadtests.sim.generation import (
    Generation,
    GenerationStream,
    SimRequestError,
    chat_prompt,
    collect_unless_disconnected,
    plan,
)
from loadtests.sim.replica import Replica
from loadtests.sim.structured import Reply, chat_reply

Body = dict[str, Any]
Shape = Callable[[list[str], str | None, bool], dict[str, Any]]


def error_response(exc: SimRequestError) -> JSONResponse:
    error: dict[str, object] = {
        "message": exc.message,
        "type": exc.err_type,
        "param": None,
        "code": exc.status,
    }
    return JSONResponse({"error": error}, status_code=exc.status)


async def read_json(request: Request) -> Body:
    try:
        body = orjson.loads(await request.body())
    except orjson.JSONDecodeError as exc:
        raise SimRequestError(400, f"invalid JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise SimRequestError(400, "request body must be a JSON object")
    return body


def _sse(obj: object) -> bytes:
    return b"data: " + orjson.dumps(obj) + b"\n\n"


def usage(gen: Generation) -> dict[str, Any]:
    s = gen.stream
    details = {"cached_tokens": s.cached_tokens} if s.cached_tokens else None
    return {
        "prompt_tokens": s.prompt_tokens,
        "total_tokens": s.prompt_tokens + s.completion_tokens,
        "completion_tokens": s.completion_tokens,
        "prompt_tokens_details": details,
    }


class OpenAIHandlers:
    """Handlers bound to one replica."""

    def __init__(self, replica: Replica) -> None:
        self.replica = replica
        # One API-server process: requests pass its front end one at a time.
        self._frontend_lock = asyncio.Lock()

    async def frontend(self) -> None:
        """The profile's per-request API-server time, before the engine sees the request;
        requests queue for the front end (a single process) in arrival order."""
        delay = self.replica.profile.frontend_s
        if delay:
            clock = self.replica.driver.clock
            async with self._frontend_lock:
                await clock.sleep_until(clock.now() + delay)

    def check_model(self, body: Body) -> None:
        model = body.get("model")
        # TGI serves one model and ignores the name asked for (clients send "tgi"); vLLM
        # refuses any name it does not serve.
        if self.replica.kind == "vllm" and model is not None and model != self.replica.served_model:
            raise SimRequestError(404, f"The model `{model}` does not exist.", "NotFoundError")

    def start(self, body: Body, prompt: str, prefix: str, reply: Reply | None = None) -> Generation:
        """The generation of a request; ``reply``: a constrained answer (tool call, JSON)."""
        self.check_model(body)
        max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
        script = None if reply is None else reply.pieces()
        p = plan(
            self.replica,
            prompt,
            None if max_tokens is None else int(max_tokens),
            ignore_eos=bool(body.get("ignore_eos", False)),
            seed=int(body.get("seed") or 0),
            length=None if script is None else len(script),
        )
        return Generation(self.replica, p, prefix, script)

    async def chat(self, request: Request) -> Response:
        try:
            body = await read_json(request)
            messages = body.get("messages")
            if not isinstance(messages, list) or not messages:
                raise SimRequestError(400, "messages must be a non-empty list")
            try:
                open_last = self.replica.kind == "vllm" and continue_final_message(body)
            except ValueError as exc:
                raise SimRequestError(400, str(exc)) from exc
            await self.frontend()
            prompt = chat_prompt(messages, body.get("tools"), open_last=open_last)
            reply = chat_reply(body, prompt, int(body.get("seed") or 0))
            gen = self.start(body, prompt, "chatcmpl", reply)
            shape = _chat_choice if reply is None or reply.tool is None else ToolCallShape(reply)
            return await self._respond(request, body, gen, "chat.completion", shape)
        except SimRequestError as exc:
            return error_response(exc)

    async def completions(self, request: Request) -> Response:
        try:
            body = await read_json(request)
            prompt = prompt_text(body.get("prompt"))
            await self.frontend()
            gen = self.start(body, prompt, "cmpl")
            return await self._respond(request, body, gen, "text_completion", _text_choice)
        except SimRequestError as exc:
            return error_response(exc)

    async def _respond(
        self, request: Request, body: Body, gen: Generation, obj: str, shape: Shape
    ) -> Response:
        created = int(time.time())
        if body.get("stream"):
            opts = body.get("stream_options")
            include_usage = isinstance(opts, dict) and bool(opts.get("include_usage"))
            events = self._stream(gen, obj, created, shape, include_usage)
            return GenerationStream(gen, events)
        text, reason = await collect_unless_disconnected(request.receive, gen)
        payload = self._envelope(gen, obj, created)
        payload["choices"] = [shape([text], reason, False)]
        payload["usage"] = usage(gen)
        return JSONResponse(payload)

    def _envelope(self, gen: Generation, obj: str, created: int) -> dict[str, Any]:
        return {
            "id": gen.request_id,
            "object": obj,
            "created": created,
            "model": self.replica.served_model,
        }

    async def _stream(
        self, gen: Generation, obj: str, created: int, shape: Shape, include_usage: bool
    ) -> AsyncGenerator[bytes, None]:
        chunk_obj = "chat.completion.chunk" if obj == "chat.completion" else obj
        head = self._envelope(gen, chunk_obj, created)
        if obj == "chat.completion":
            first = {"index": 0, "delta": {"role": "assistant", "content": ""}}
            yield _sse({**head, "choices": [{**first, "logprobs": None, "finish_reason": None}]})
        die_after = gen.fate.die_after
        if die_after == 0:
            await self._die(gen)
        sent = 0
        async with contextlib.aclosing(gen.chunks()) as chunks:
            async for chunk in chunks:
                choice = shape(chunk.pieces, chunk.finish_reason, True)
                event = {**head, "choices": [choice]}
                if include_usage:
                    event["usage"] = None
                yield _sse(event)
                sent += len(chunk.pieces)
                if die_after is not None and sent >= die_after and chunk.finish_reason is None:
                    await self._die(gen)
        if include_usage:
            yield _sse({**head, "choices": [], "usage": usage(gen)})
        yield b"data: [DONE]\n\n"

    async def _die(self, gen: Generation) -> None:
        """End the stream as its fate says; never returns."""
        mode = gen.fate.death_mode
        self.replica.faults.died(mode)
        if mode == "exit":
            self.replica.faults.exit(EXIT_STATUS)
        if mode == "hang":
            await gen.dropped.wait()  # until the client leaves (or the request is aborted)
            raise RequestAborted(gen.request_id)
        raise StreamCut(gen.request_id)

    async def models(self, request: Request) -> Response:
        r = self.replica
        card = {
            "id": r.served_model,
            "object": "model",
            "created": int(time.time()),
            "owned_by": "vllm" if r.kind == "vllm" else "tgi",
            "root": r.served_model,
            "parent": None,
            "max_model_len": r.profile.max_model_len,
            "permission": [],
        }
        return JSONResponse({"object": "list", "data": [card]})


def prompt_text(prompt: object) -> str:
    """A completions prompt as text: a string, token ids, or a batch of either. The simulator
    answers a batch with one generation over its prompts joined, as it answers ``n`` > 1
    with one choice."""
    if isinstance(prompt, str):
        return prompt
    ids = tokenizer.token_ids(prompt)
    if ids is not None:
        return " ".join(f"t{t}" for t in ids)
    if isinstance(prompt, list) and all(isinstance(p, str | list) for p in prompt):
        return "\n".join(prompt_text(p) for p in prompt)
    raise SimRequestError(400, "prompt must be a string, token ids, or a list of either")


def _chat_choice(pieces: list[str], reason: str | None, stream: bool) -> dict[str, Any]:
    text = "".join(pieces)
    body = {"content": text} if stream else {"role": "assistant", "content": text}
    return {
        "index": 0,
        "delta" if stream else "message": body,
        "logprobs": None,
        "finish_reason": reason,
        "stop_reason": None,
    }


class ToolCallShape:
    """Choices of an answer that calls a tool, whole or as deltas (as vLLM streams them: the
    call's id, type and name first, then its arguments piece by piece); it finishes with
    "tool_calls" unless ``max_tokens`` cut the arguments short ("length")."""

    def __init__(self, reply: Reply) -> None:
        assert reply.tool is not None
        self.tool = reply.tool
        self.call_id = f"chatcmpl-tool-{uuid.uuid4().hex}"
        self._named = False

    def __call__(self, pieces: list[str], reason: str | None, stream: bool) -> dict[str, Any]:
        finish = "tool_calls" if reason == "stop" else reason
        arguments = "".join(pieces)
        call: dict[str, Any] = {"index": 0, "function": {"arguments": arguments}}
        if not stream or not self._named:
            call.update(id=self.call_id, type="function")
            call["function"] = {"name": self.tool.name, "arguments": arguments}
            self._named = True
        if not stream:
            del call["index"]
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
            return {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}
        delta = {"tool_calls": [call]}
        return {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}


def _text_choice(pieces: list[str], reason: str | None, stream: bool) -> dict[str, Any]:
    return {
        "index": 0,
        "text": "".join(pieces),
        "logprobs": None,
        "finish_reason": reason,
        "stop_reason": None,
    }


def openai_routes(h: OpenAIHandlers) -> list[Route]:
    return [
        Route("/v1/chat/completions", h.chat, methods=["POST"]),
        Route("/v1/completions", h.completions, methods=["POST"]),
        Route("/v1/models", h.models, methods=["GET"]),
    ]
