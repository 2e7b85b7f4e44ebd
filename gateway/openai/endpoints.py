"""What the gateway reads in each endpoint's answers, and where each endpoint lives upstream.

The relay (``path/relay.py``, ``path/exchange/events.py``) is one for every endpoint; what
differs is here, as values and small pure functions:

- the upstream path (below the backend's root prefix, ``upstream/origin.py``);
- where the model name sits: at the top of a body or chunk, and for the Responses API also in
  the ``response`` object its lifecycle events carry (``response.created``, ...); the public
  name replaces the backend's own wherever it sits, and nothing else of the event changes;
- usage: ``prompt_tokens``/``completion_tokens`` (chat, completions, embeddings, rerank,
  score) or ``input_tokens``/``output_tokens`` (Responses API);
- which events carry generated output (the first one is the time to first token): a chunk
  with text, content or a tool call; a Responses API ``*.delta`` event with a non-empty delta;
- how a stream ends: ``data: [DONE]`` (chat, completions), or for the Responses API (which
  sends no ``[DONE]``) a terminal event (``response.completed``, ``response.failed``,
  ``response.incomplete``) and then the end of the body; a typed stream keeps its
  ``event:`` lines, and an error the gateway reports mid-stream is an ``error`` event there.
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway.openai.request import PASS_THROUGH, Endpoint

UPSTREAM_PATHS: dict[Endpoint, str] = {
    "chat": "/v1/chat/completions",
    "completions": "/v1/completions",
    "embeddings": "/v1/embeddings",
    "responses": "/v1/responses",
    "tokenize": "/tokenize",
    "detokenize": "/detokenize",
    "rerank": "/v1/rerank",
    "score": "/v1/score",
}

# The gateway serves each endpoint at the path its backends serve it at.
GATEWAY_PATHS: dict[str, Endpoint] = {path: endpoint for endpoint, path in UPSTREAM_PATHS.items()}

# The Responses API's last events; the stream ends after one of them.
TERMINAL_EVENTS = frozenset({"response.completed", "response.failed", "response.incomplete"})

_OUTPUT_KEYS = ("content", "tool_calls", "reasoning_content", "refusal")


def typed_events(endpoint: Endpoint) -> bool:
    """True for streams of named events (``event:`` lines) that end without ``[DONE]``."""
    return endpoint == "responses"


def show_public_model(obj: dict[str, Any], public: str, *, always: bool = False) -> None:
    """Replace the backend's model name with the public one wherever the answer has one
    (``always``: at the top even where it has none, as a whole answer of a generating
    endpoint must say its model)."""
    if always or "model" in obj:
        obj["model"] = public
    inner = obj.get("response")
    if isinstance(inner, dict) and "model" in inner:
        inner["model"] = public


def always_named(endpoint: Endpoint) -> bool:
    """Whether a whole answer names its model (vLLM's own routes, such as tokenize, may not)."""
    return endpoint not in PASS_THROUGH


def usage(obj: dict[str, Any]) -> tuple[int | None, int | None]:
    """``(prompt_tokens, completion_tokens)`` of a body or event's usage, when present."""
    inner = obj.get("response")
    source = inner if isinstance(inner, dict) and "usage" in inner else obj
    found = source.get("usage")
    if not isinstance(found, dict):
        return None, None
    prompt = found.get("prompt_tokens", found.get("input_tokens"))
    completion = found.get("completion_tokens", found.get("output_tokens"))
    return _count(prompt), _count(completion)


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and value >= 0 else None


def carries_token(event: dict[str, Any]) -> bool:
    """Whether an event holds generated output (text, content, a tool call, a delta)."""
    kind = event.get("type")
    if isinstance(kind, str):
        return kind.endswith(".delta") and bool(event.get("delta"))
    choices = event.get("choices")
    if not isinstance(choices, list):
        return False
    for choice in choices:
        if not isinstance(choice, dict):
            continue
        if choice.get("text"):
            return True
        delta = choice.get("delta")
        if isinstance(delta, dict) and any(delta.get(k) for k in _OUTPUT_KEYS):
            return True
    return False


def is_terminal(event: dict[str, Any]) -> bool:
    return event.get("type") in TERMINAL_EVENTS


def frame(payload: bytes, event: bytes | None = None) -> bytes:
    """One SSE event; ``event`` is the name of a typed event (the ``event:`` line's value)."""
    head = b"event: " + event + b"\n" if event is not None else b""
    return head + b"data: " + payload + b"\n\n"


def error_frame(endpoint: Endpoint, body: dict[str, Any], sequence: int) -> bytes:
    """The gateway's own error inside a stream: ``{"error": {...}}`` as OpenAI's chat streams
    carry it, or the Responses API's ``error`` event (``type``, ``code``, ``message``,
    ``param``, ``sequence_number``)."""
    if not typed_events(endpoint):
        return frame(orjson.dumps(body))
    error = body.get("error", {})
    event = {
        "type": "error",
        "code": error.get("code") or error.get("type"),
        "message": error.get("message"),
        "param": error.get("param"),
        "sequence_number": sequence,
    }
    return frame(orjson.dumps(event), b"error")
