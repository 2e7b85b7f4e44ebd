"""Server-sent events: split an upstream byte stream into lines, frame events for the client.

OpenAI-compatible servers send one JSON object per ``data:`` line, events separated by a
blank line; ``data: [DONE]`` ends the stream. Lines are split on ``\\n`` (``\\r\\n`` too), and a
line is released as soon as it is complete, so nothing is held back.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson

DONE = b"data: [DONE]\n\n"


async def iter_lines(chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """Yield complete lines (without the line break) as soon as they arrive."""
    pending = b""
    async for chunk in chunks:
        if pending:
            chunk = pending + chunk
        *lines, pending = chunk.split(b"\n")
        for line in lines:
            yield line.removesuffix(b"\r")
    if pending:
        yield pending.removesuffix(b"\r")


def data_payload(line: bytes) -> bytes | None:
    """The payload of a ``data:`` line, or None for other lines (comments, event names)."""
    if not line.startswith(b"data:"):
        return None
    return line[5:].lstrip(b" ")


def frame(payload: bytes) -> bytes:
    return b"data: " + payload + b"\n\n"


def frame_json(obj: dict[str, Any]) -> bytes:
    return frame(orjson.dumps(obj))
