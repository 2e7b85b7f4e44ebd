"""Incremental parser for OpenAI chat-completion Server-Sent Events, one line at a time.

Algorithm: lines starting with ``data:`` carry a JSON chunk or the ``[DONE]`` sentinel;
``event:`` lines name the next event (``event: error`` marks an error payload); comments
(``:``) and blank lines are ignored. A chunk yields at most one ``SseEvent`` that says whether
it carried content (non-empty ``choices[].delta.content``), usage, an error object, or the
end of the stream. Malformed JSON is reported as an error event instead of raising, so a
broken upstream never crashes a run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int | None
    completion_tokens: int | None


@dataclass(frozen=True, slots=True)
class SseEvent:
    content: str = ""
    usage: Usage | None = None
    error: str | None = None
    done: bool = False


def _content(chunk: dict[str, Any]) -> str:
    parts: list[str] = []
    for choice in chunk.get("choices") or ():
        if not isinstance(choice, dict):
            continue
        delta = choice.get("delta") or {}
        text = delta.get("content") if isinstance(delta, dict) else None
        if isinstance(text, str):
            parts.append(text)
    return "".join(parts)


def _usage(chunk: dict[str, Any]) -> Usage | None:
    usage = chunk.get("usage")
    if not isinstance(usage, dict):
        return None
    prompt = usage.get("prompt_tokens")
    completion = usage.get("completion_tokens")
    return Usage(
        prompt_tokens=prompt if isinstance(prompt, int) else None,
        completion_tokens=completion if isinstance(completion, int) else None,
    )


def _error(chunk: dict[str, Any]) -> str | None:
    error = chunk.get("error")
    if error is None:
        return None
    if isinstance(error, dict):
        kind = error.get("type") or error.get("code") or "error"
        return str(kind)
    return str(error)


class SseParser:
    """Feed decoded lines (without the trailing newline); get events back."""

    def __init__(self) -> None:
        self._event_name = ""

    def feed(self, line: str) -> SseEvent | None:
        if not line or line.startswith(":"):
            if not line:
                self._event_name = ""
            return None
        if line.startswith("event:"):
            self._event_name = line[6:].strip()
            return None
        if not line.startswith("data:"):
            return None
        return self._data(line[5:].strip())

    def _data(self, payload: str) -> SseEvent:
        if payload == "[DONE]":
            return SseEvent(done=True)
        try:
            chunk = orjson.loads(payload)
        except orjson.JSONDecodeError:
            return SseEvent(error="bad_json")
        if not isinstance(chunk, dict):
            return SseEvent(error="bad_chunk")
        error = _error(chunk)
        if error is None and self._event_name == "error":
            error = "error_event"
        return SseEvent(content=_content(chunk), usage=_usage(chunk), error=error)
