"""vLLM's Responses API route (``POST /v1/responses``), streaming typed events or not.

The request's ``instructions`` and ``input`` (text, or message items) are rendered with the
chat template; ``max_output_tokens`` bounds the output. Streaming sends, as OpenAI's Responses
API does, each event as ``event: <type>`` plus its JSON ``data:`` with a ``sequence_number``:
``response.created``, ``response.in_progress``, ``response.output_item.added``,
``response.content_part.added``, one ``response.output_text.delta`` per engine step,
``response.output_text.done``, ``response.content_part.done``, ``response.output_item.done``,
then ``response.completed`` (or ``response.incomplete`` when the output hit
``max_output_tokens``), and no ``[DONE]``.

Constrained requests (``structured.py``): ``text.format`` (``json_schema``, ``json_object``)
makes the output text JSON; ``tools`` (function tools) make the output a ``function_call``
item (``call_id``, ``name``, ``arguments``), streamed as ``response.output_item.added``, one
``response.function_call_arguments.delta`` per engine step,
``response.function_call_arguments.done`` and ``response.output_item.done``. Input items
that are calls and their results (``function_call``, ``function_call_output``) are part of
the prompt.
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
from loadtests.sim.structured import ToolCall, responses_reply

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
        kind = item.get("type", "message")
        role = {"function_call": "assistant", "function_call_output": "tool"}.get(kind, "user")
        content = item.get("content", item.get("arguments", item.get("output")))
        messages.append({"role": item.get("role", role), "content": content})
    return messages


class ResponsesHandler:
    def __init__(self, handlers: OpenAIHandlers) -> None:
        self._h = handlers

    async def respond(self, request: Request) -> Response:
        try:
            body = await read_json(request)
            prompt = chat_prompt(_messages(body), body.get("tools"))
            await self._h.frontend()
            limit = body.get("max_output_tokens")
            reply = responses_reply(body, prompt, int(body.get("seed") or 0))
            gen = self._h.start({**body, "max_tokens": limit}, prompt, "resp", reply)
        except SimRequestError as exc:
            return error_response(exc)
        tool = None if reply is None else reply.tool
        shape = _Shape(gen, body, self._h.replica.served_model, tool)
        if body.get("stream"):
            return GenerationStream(gen, _events(gen, shape))
        try:
            text, reason = await collect_unless_disconnected(request.receive, gen)
        except SimRequestError as exc:
            return error_response(exc)
        return JSONResponse(shape.response(text, reason))


class _Shape:
    """The Response object of one generation, as it is at each point of its life."""

    def __init__(self, gen: Generation, body: Body, model: str, tool: ToolCall | None) -> None:
        self.gen = gen
        self.body = body
        self.model = model
        self.tool = tool
        self.created = int(time.time())
        self.item_id = f"{'fc' if tool is not None else 'msg'}_{uuid.uuid4().hex}"
        self.call_id = f"call_{uuid.uuid4().hex}"

    def message(self, text: str | None, status: str) -> dict[str, Any]:
        """The output item: the message, or the function call whose arguments are ``text``."""
        if self.tool is not None:
            return {
                "type": "function_call",
                "id": self.item_id,
                "call_id": self.call_id,
                "name": self.tool.name,
                "arguments": text or "",
                "status": status,
            }
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
            "tool_choice": self.body.get("tool_choice", "auto"),
            "tools": self.body.get("tools") or [],
            "text": self.body.get("text") or {"format": {"type": "text"}},
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
    call = shape.tool is not None
    where: dict[str, Any] = {"item_id": shape.item_id, "output_index": 0}
    if not call:
        where["content_index"] = 0
    yield _event("response.created", next(numbers), {"response": shape.response(None, None)})
    yield _event("response.in_progress", next(numbers), {"response": shape.response(None, None)})
    item = {"output_index": 0, "item": shape.message(None, "in_progress")}
    yield _event("response.output_item.added", next(numbers), item)
    if not call:
        part = {**where, "part": shape.part("")}
        yield _event("response.content_part.added", next(numbers), part)
    pieces: list[str] = []
    reason = "length"
    kind = "function_call_arguments" if call else "output_text"
    async for chunk in gen.chunks():
        delta = "".join(chunk.pieces)
        pieces.append(delta)
        reason = chunk.finish_reason or reason
        if delta:
            fields = {**where, "delta": delta, **({} if call else {"logprobs": []})}
            yield _event(f"response.{kind}.delta", next(numbers), fields)
    text = "".join(pieces)
    if call:
        assert shape.tool is not None
        fields = {**where, "name": shape.tool.name, "arguments": text}
        yield _event("response.function_call_arguments.done", next(numbers), fields)
    else:
        fields = {**where, "text": text, "logprobs": []}
        yield _event("response.output_text.done", next(numbers), fields)
        part = {**where, "part": shape.part(text)}
        yield _event("response.content_part.done", next(numbers), part)
    done = {"output_index": 0, "item": shape.message(text, "completed")}
    yield _event("response.output_item.done", next(numbers), done)
    final = shape.response(text, reason)
    last = "response.incomplete" if final["status"] == "incomplete" else "response.completed"
    yield _event(last, next(numbers), {"response": final})
