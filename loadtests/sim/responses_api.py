"""vLLM's Responses API route (``POST /v1/responses``), streaming typed events or not.

The request's ``instructions`` and ``input`` (text, or message items) are rendered with the
chat template; ``max_output_tokens`` bounds the output. Streaming sends, as OpenAI's Responses
API does, each event as ``event: <type>`` plus its JSON ``data:`` with a ``sequence_number``:
``response.created``, ``response.in_progress``, ``response.output_item.added``,
``response.content_part.added``, one ``response.output_text.delta`` per engine step,
``response.output_text.done``, ``response.content_part.done``, ``response.output_item.done``,
then ``response.completed`` (or ``response.incomplete`` when the output hit
``max_output_tokens``), and no ``[DONE]``.
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import AsyncGenerator
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from loadtests.sim.generation import (
    Generation,
    GenerationStream,
    SimRequestError,
    chat_prompt,
    collect_unless_disconnected,
)
from loadtests.sim.openai_routes import OpenAIHandlers, error_response, read_json

Body = dict[str, Any]


def _messages(body: Body) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if isinstance(body.get("instructions"), str):
        messages.append({"role": "system", "content": body["instructions"]})
    items = body.get("input")
    if isinstance(items, str):
        return [*messages, {"role": "user", "content": items}]
    if not isinstance(items, list) or not items:
        raise SimRequestError(400, "input must be a string or a non-empty list of items")
    for item in items:
        if not isinstance(item, dict):
            raise SimRequestError(400, "every input item must be an object")
        messages.append({"role": item.get("role", "user"), "content": item.get("content")})
    return messages


class ResponsesHandler:
    def __init__(self, handlers: OpenAIHandlers) -> None:
        self._h = handlers

    async def respond(self, request: Request) -> Response:
        try:
            body = await read_json(request)
            prompt = chat_prompt(_messages(body))
            await self._h.frontend()
            limit = body.get("max_output_tokens")
            gen = self._h.start({**body, "max_tokens": limit}, prompt, "resp")
        except SimRequestError as exc:
            return error_response(exc)
        shape = _Shape(gen, body, self._h.replica.served_model)
        if body.get("stream"):
            return GenerationStream(gen, _events(gen, shape))
        try:
            text, reason = await collect_unless_disconnected(request.receive, gen)
        except SimRequestError as exc:
            return error_response(exc)
        return JSONResponse(shape.response(text, reason))


class _Shape:
    """The Response object of one generation, as it is at each point of its life."""

    def __init__(self, gen: Generation, body: Body, model: str) -> None:
        self.gen = gen
        self.body = body
        self.model = model
        self.created = int(time.time())
        self.item_id = f"msg_{uuid.uuid4().hex}"

    def message(self, text: str | None, status: str) -> dict[str, Any]:
        content = [] if text is None else [self.part(text)]
        return {
            "type": "message",
            "id": self.item_id,
            "status": status,
            "role": "assistant",
            "content": content,
        }

    @staticmethod
    def part(text: str) -> dict[str, Any]:
        return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}

    def response(self, text: str | None, reason: str | None) -> dict[str, Any]:
        status = "in_progress" if reason is None else "completed"
        incomplete = None
        if reason == "length":
            status, incomplete = "incomplete", {"reason": "max_output_tokens"}
        item_status = "in_progress" if reason is None else "completed"
        return {
            "id": self.gen.request_id,
            "object": "response",
            "created_at": self.created,
            "status": status,
            "model": self.model,
            "instructions": self.body.get("instructions"),
            "max_output_tokens": self.body.get("max_output_tokens"),
            "output": [] if text is None else [self.message(text, item_status)],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "temperature": self.body.get("temperature", 1.0),
            "top_p": self.body.get("top_p", 1.0),
            "error": None,
            "incomplete_details": incomplete,
            "metadata": {},
            "usage": None if reason is None else self.usage(),
        }

    def usage(self) -> dict[str, Any]:
        s = self.gen.stream
        return {
            "input_tokens": s.prompt_tokens,
            "input_tokens_details": {"cached_tokens": s.cached_tokens},
            "output_tokens": s.completion_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": s.prompt_tokens + s.completion_tokens,
        }


def _event(kind: str, sequence: int, fields: dict[str, Any]) -> bytes:
    data = orjson.dumps({"type": kind, "sequence_number": sequence, **fields})
    return b"event: " + kind.encode() + b"\ndata: " + data + b"\n\n"


async def _events(gen: Generation, shape: _Shape) -> AsyncGenerator[bytes, None]:
    numbers = itertools.count()
    where = {"item_id": shape.item_id, "output_index": 0, "content_index": 0}
    yield _event("response.created", next(numbers), {"response": shape.response(None, None)})
    yield _event("response.in_progress", next(numbers), {"response": shape.response(None, None)})
    item = {"output_index": 0, "item": shape.message(None, "in_progress")}
    yield _event("response.output_item.added", next(numbers), item)
    yield _event("response.content_part.added", next(numbers), {**where, "part": shape.part("")})
    pieces: list[str] = []
    reason = "length"
    async for chunk in gen.chunks():
        delta = "".join(chunk.pieces)
        pieces.append(delta)
        reason = chunk.finish_reason or reason
        if delta:
            fields = {**where, "delta": delta, "logprobs": []}
            yield _event("response.output_text.delta", next(numbers), fields)
    text = "".join(pieces)
    yield _event(
        "response.output_text.done", next(numbers), {**where, "text": text, "logprobs": []}
    )
    yield _event("response.content_part.done", next(numbers), {**where, "part": shape.part(text)})
    done = {"output_index": 0, "item": shape.message(text, "completed")}
    yield _event("response.output_item.done", next(numbers), done)
    final = shape.response(text, reason)
    last = "response.incomplete" if final["status"] == "incomplete" else "response.completed"
    yield _event(last, next(numbers), {"response": final})
