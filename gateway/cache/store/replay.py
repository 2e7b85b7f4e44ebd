"""Serve a cached answer as if it were live: a fresh id, the client's model name, usage.

Non-streaming: the stored answer object with a new ``id`` and ``created``. Streaming: the
answer replayed as a well-formed SSE stream, the sequence an OpenAI server sends: a first
chunk with the role, the content in pieces of a few words, a chunk with the
``finish_reason``, a usage chunk (empty ``choices``) when ``stream_options.include_usage``
asked for one, then ``data: [DONE]``. Usage: the stored completion tokens, and the prompt
tokens of this request (its own count, since a semantic hit's prompt differs).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Any

from gateway.classify import estimate_tokens

_PIECE = re.compile(r"\s*\S+(?:\s+\S+){0,3}\s*")


def fresh_answer(
    stored: dict[str, Any], *, model: str, created: int, prompt_tokens: int
) -> dict[str, Any]:
    answer = dict(stored)
    answer["id"] = _new_id(str(stored.get("object", "")))
    answer["created"] = created
    answer["model"] = model
    answer["usage"] = _usage(stored, prompt_tokens)
    return answer


def stream_chunks(answer: dict[str, Any], *, include_usage: bool) -> Iterator[dict[str, Any]]:
    """The stream chunks of a fresh answer (see ``fresh_answer``), in order; the edge frames
    them as server-sent events and ends them with ``[DONE]``."""
    chat = answer.get("object") == "chat.completion"
    head = {
        "id": answer["id"],
        "object": "chat.completion.chunk" if chat else "text_completion",
        "created": answer["created"],
        "model": answer["model"],
    }
    if answer.get("system_fingerprint") is not None:
        head["system_fingerprint"] = answer["system_fingerprint"]
    choice = answer["choices"][0]
    if chat:
        message = choice["message"]
        yield head | {"choices": [_delta({"role": message["role"], "content": ""})]}
        text = message.get("content") or ""
    else:
        text = choice.get("text") or ""
    for piece in _PIECE.findall(text):
        part = _delta({"content": piece}) if chat else _text(piece)
        yield head | {"choices": [part]}
    last = _delta({}) if chat else _text("")
    last["finish_reason"] = choice.get("finish_reason", "stop")
    yield head | {"choices": [last]}
    if include_usage:
        yield head | {"choices": [], "usage": answer["usage"]}


def _delta(delta: dict[str, Any]) -> dict[str, Any]:
    return {"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}


def _text(text: str) -> dict[str, Any]:
    return {"index": 0, "text": text, "logprobs": None, "finish_reason": None}


def _usage(stored: dict[str, Any], prompt_tokens: int) -> dict[str, int]:
    usage = stored.get("usage")
    completion = usage.get("completion_tokens") if isinstance(usage, dict) else None
    if not isinstance(completion, int):
        completion = estimate_completion(stored)
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion,
        "total_tokens": prompt_tokens + completion,
    }


def estimate_completion(answer: dict[str, Any]) -> int:
    choice = answer["choices"][0]
    text = choice.get("text") if "text" in choice else choice["message"].get("content")
    return estimate_tokens(text or "")


def _new_id(obj: str) -> str:
    prefix = "chatcmpl" if obj.startswith("chat") else "cmpl"
    return f"{prefix}-{uuid.uuid4().hex}"
