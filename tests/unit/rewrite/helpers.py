"""Builders and inverses shared by the rewrite tests."""

from __future__ import annotations

from typing import Any

from gateway.rewrite import note
from gateway.rewrite.config import NotePlacement
from gateway.rewrite.record import RewriteRecord


def chat(*messages: tuple[str, Any], tools: list[Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "m",
        "messages": [{"role": role, "content": content} for role, content in messages],
    }
    if tools is not None:
        body["tools"] = tools
    return body


def tool(name: str, **parameters: Any) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "parameters": {"type": "object", "properties": parameters}},
    }


def restore(body: dict[str, Any], record: RewriteRecord) -> list[tuple[str, Any]]:
    """``(role, content)`` of each message with placeholders filled and the note removed."""
    values = {fragment.label: fragment.text for fragment in record.fragments}
    out: list[tuple[str, Any]] = []
    separate = record.note_placement is NotePlacement.SYSTEM_MESSAGE
    for message in body["messages"]:
        content = message.get("content")
        if separate and isinstance(content, str) and note.is_note(content):
            separate = False  # the note message itself
            continue
        out.append((message["role"], _restore_content(content, values)))
    return out


def _restore_content(content: Any, values: dict[str, str]) -> Any:
    if isinstance(content, str):
        return _restore_text(content, values)
    if isinstance(content, list):
        return [
            {**part, "text": _restore_text(part["text"], values)}
            if part.get("type") == "text"
            else part
            for part in content
            if not (part.get("type") == "text" and note.is_note(part["text"]))
        ]
    return content


def _restore_text(text: str, values: dict[str, str]) -> str:
    split = note.split_note(text)
    if split is not None:
        text = split[0]
    # Longest labels first: "timestamp 2" must not be read as "timestamp".
    for label in sorted(values, key=len, reverse=True):
        text = text.replace(note.placeholder(label), values[label])
    return text


def texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [p["text"] for p in content if p.get("type") == "text"]
    return []


def words(messages: list[tuple[str, Any]]) -> list[str]:
    """Whitespace-separated pieces of every text, in order."""
    return [word for _role, content in messages for text in texts(content) for word in text.split()]
