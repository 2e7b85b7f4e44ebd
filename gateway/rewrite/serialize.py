"""A canonical text of a prompt for prefix comparison, cut into role segments.

Format (what a chat template roughly renders, in the order it renders it): each message is
one segment ``<|role|>\n`` + content + ``\n``, where list content is its parts one per line
(text as is, other parts as ``<|type:digest|>``, a 64-bit BLAKE2b of the part's JSON, so an
image costs 16 characters) and ``name``, ``tool_call_id``, ``tool_calls`` and
``function_call`` follow as one ``<|meta|>`` JSON line. The tool definitions are one segment
``<|tools|>\n`` with one JSON line per tool, in the order given and with the keys as given,
placed after the leading system/developer messages. A completion prompt is one ``prompt``
segment per string (token-id prompts as JSON).

A segment always ends with ``\n`` and a header always starts with ``<|``, so a prompt that
only adds messages at the end has the earlier prompt's text as an exact prefix.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from gateway.openai.messages import responses_messages

_SYSTEM_ROLES = frozenset({"system", "developer"})
_META_KEYS = ("name", "tool_call_id", "tool_calls", "function_call")


@dataclass(frozen=True, slots=True)
class SerializedPrompt:
    """The text (maybe cut to a bound), where each segment starts and its role."""

    text: str
    starts: tuple[int, ...]
    roles: tuple[str, ...]
    length: int  # of the whole text, before any cut
    digest: bytes  # BLAKE2b-128 of the whole text

    @property
    def truncated(self) -> bool:
        return len(self.text) < self.length

    def segment_index(self, offset: int) -> int:
        """Index of the segment holding character ``offset`` (the last one past the end)."""
        return max(0, bisect_right(self.starts, offset) - 1)

    def segment(self, index: int) -> tuple[int, int, str]:
        """``(start, end, role)`` of a segment, ``end`` bounded by the kept text (an empty
        prompt, e.g. ``"prompt": []``, has no segment: the whole text, role ``""``)."""
        if not self.starts:
            return 0, len(self.text), ""
        end = self.starts[index + 1] if index + 1 < len(self.starts) else len(self.text)
        return self.starts[index], min(end, len(self.text)), self.roles[index]

    def cut(self, max_chars: int) -> SerializedPrompt:
        """The same prompt keeping only its first ``max_chars`` characters of text."""
        if len(self.text) <= max_chars:
            return self
        kept = bisect_right(self.starts, max_chars - 1) if max_chars > 0 else 0
        return SerializedPrompt(
            self.text[:max_chars], self.starts[:kept], self.roles[:kept], self.length, self.digest
        )


def serialize(body: Mapping[str, Any]) -> SerializedPrompt:
    """The comparison text of a chat or completion body (of a Responses API request: its
    instructions and input items as a chat; of an embeddings request: none, its texts being
    no prompt a replica's cache could share)."""
    messages = body.get("messages")
    if isinstance(messages, list):
        segments = _chat_segments(messages, body.get("tools"))
    elif "input" in body:
        segments = _chat_segments(responses_messages(body), body.get("tools"))
    else:
        segments = _prompt_segments(body.get("prompt"))
    return _join(segments)


def _join(segments: list[tuple[str, str]]) -> SerializedPrompt:
    starts: list[int] = []
    pos = 0
    for _role, piece in segments:
        starts.append(pos)
        pos += len(piece)
    text = "".join(piece for _role, piece in segments)
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    return SerializedPrompt(text, tuple(starts), tuple(r for r, _ in segments), len(text), digest)


def _chat_segments(messages: list[Any], tools: Any) -> list[tuple[str, str]]:
    segments: list[tuple[str, str]] = []
    tools_placed = not (isinstance(tools, list) and tools)
    for message in messages:
        role = message.get("role") if isinstance(message, dict) else None
        if not tools_placed and role not in _SYSTEM_ROLES:
            segments.append(_tools_segment(tools))
            tools_placed = True
        segments.append(_message_segment(message))
    if not tools_placed:
        segments.append(_tools_segment(tools))
    return segments


def _tools_segment(tools: list[Any]) -> tuple[str, str]:
    lines = "".join(_json(tool) + "\n" for tool in tools)
    return "tools", "<|tools|>\n" + lines


def _message_segment(message: Any) -> tuple[str, str]:
    if not isinstance(message, dict):
        return "other", "<|other|>\n" + _json(message) + "\n"
    role = str(message.get("role"))
    body = _content(message.get("content"))
    meta = {key: message[key] for key in _META_KEYS if message.get(key) is not None}
    if meta:
        body += ("\n" if body else "") + "<|meta|>" + _json(meta)
    return role, f"<|{role}|>\n{body}\n"


def _content(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_part(part) for part in content)
    return _json(content)


def _part(part: Any) -> str:
    if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
        text: str = part["text"]
        return text
    kind = part.get("type", "part") if isinstance(part, dict) else "part"
    digest = hashlib.blake2b(_json(part).encode(), digest_size=8).hexdigest()
    return f"<|{kind}:{digest}|>"


def _prompt_segments(prompt: Any) -> list[tuple[str, str]]:
    if isinstance(prompt, str):
        return [("prompt", f"<|prompt|>\n{prompt}\n")]
    if isinstance(prompt, list) and all(isinstance(p, str) for p in prompt):
        return [("prompt", f"<|prompt|>\n{p}\n") for p in prompt]
    return [("prompt", "<|prompt|>\n" + _json(prompt) + "\n")]


def _json(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()
    except orjson.JSONEncodeError:
        return repr(value)  # not JSON at all: still a stable, comparable text
