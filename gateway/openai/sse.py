"""Server-sent events: split an upstream byte stream into lines, frame events for the client.

OpenAI-compatible servers send one JSON object per ``data:`` line, events separated by a
blank line; ``data: [DONE]`` ends the stream. Lines are split on ``\\n`` (``\\r\\n`` too), and a
line is released as soon as it is complete, so nothing is held back.
"""

from __future__ import annotations

from typing import Any

import orjson

DONE = b"data: [DONE]\n\n"


class LineSplitter:
    """Turns a byte stream, chunked anyhow, into complete lines (line breaks removed)."""

    __slots__ = ("pending",)

    def __init__(self) -> None:
        self.pending = b""  # an unfinished line

    def feed(self, chunk: bytes) -> list[bytes]:
        """The lines that ``chunk`` completes; the unfinished tail waits for the next chunk."""
        if self.pending:
            chunk = self.pending + chunk
        *lines, self.pending = chunk.split(b"\n")
        if chunk.find(b"\r") < 0:  # not ``in``: see ``plain_events.py``
            return lines
        return [line.removesuffix(b"\r") for line in lines]

    def flush(self) -> list[bytes]:
        """At the end of the stream: the last line if it had no line break."""
        tail, self.pending = self.pending, b""
        return [tail.removesuffix(b"\r")] if tail else []


def data_payload(line: bytes) -> bytes | None:
    """The payload of a ``data:`` line, or None for other lines (comments, event names)."""
    if not line.startswith(b"data:"):
        return None
    return line[5:].lstrip(b" ")


def frame(payload: bytes) -> bytes:
    return b"data: " + payload + b"\n\n"


def frame_json(obj: dict[str, Any]) -> bytes:
    return frame(orjson.dumps(obj))


class Unread:
    """Event frames relayed without a parse (``data: `` + one JSON object + a blank line),
    kept as sent and parsed only when someone reads them (``take``)."""

    __slots__ = ("_frames",)

    def __init__(self) -> None:
        self._frames: list[bytes] = []

    def __bool__(self) -> bool:
        return bool(self._frames)

    def keep(self, frame: bytes) -> None:
        self._frames.append(frame)

    def take(self) -> list[dict[str, Any]]:
        """The kept events, parsed, oldest first; none are kept after."""
        frames, self._frames = self._frames, []
        return [orjson.loads(frame[6:]) for frame in frames]
