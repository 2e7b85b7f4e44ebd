"""SSE line splitting (independent of chunking) and data-line payloads."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from gateway.openai.sse import DONE, LineSplitter, data_payload, frame, frame_json


def _lines(parts: Sequence[bytes]) -> list[bytes]:
    splitter = LineSplitter()
    lines = [line for part in parts for line in splitter.feed(part)]
    return lines + splitter.flush()


# id -> (whole stream, expected lines)
STREAMS: dict[str, tuple[bytes, list[bytes]]] = {
    "openai events": (
        b'data: {"a":1}\n\ndata: {"b":2}\n\ndata: [DONE]\n\n',
        [b'data: {"a":1}', b"", b'data: {"b":2}', b"", b"data: [DONE]", b""],
    ),
    "crlf line breaks": (
        b"event: x\r\ndata: 1\r\n\r\n",
        [b"event: x", b"data: 1", b""],
    ),
    "trailing partial line": (b"data: 1\ndata: 2", [b"data: 1", b"data: 2"]),
    "trailing partial line with cr": (b"data: 1\ndata: 2\r", [b"data: 1", b"data: 2"]),
    "comment and blank lines": (b": ping\n\n\n", [b": ping", b"", b""]),
    "cr inside a line is kept": (b"a\rb\n", [b"a\rb"]),
    "multibyte utf-8": ("data: é😀\n".encode(), ["data: é😀".encode()]),
    "empty stream": (b"", []),
}


@pytest.mark.parametrize(("data", "expected"), STREAMS.values(), ids=STREAMS.keys())
def test_lines_do_not_depend_on_chunking(data: bytes, expected: list[bytes]) -> None:
    assert _lines([data]) == expected
    assert _lines([data[i : i + 1] for i in range(len(data))]) == expected
    for i in range(len(data) + 1):
        assert _lines([data[:i], data[i:]]) == expected, i


def test_every_three_way_split() -> None:
    data, expected = STREAMS["crlf line breaks"]
    for i in range(len(data) + 1):
        for j in range(i, len(data) + 1):
            assert _lines([data[:i], data[i:j], b"", data[j:]]) == expected, (i, j)


def test_a_line_is_released_by_the_chunk_that_completes_it() -> None:
    splitter = LineSplitter()
    assert splitter.feed(b"data: 1\n\nda") == [b"data: 1", b""]
    assert splitter.feed(b"ta: 2") == []
    assert splitter.feed(b"\n") == [b"data: 2"]
    assert splitter.flush() == []


@pytest.mark.parametrize(
    ("line", "payload"),
    [
        (b'data: {"a":1}', b'{"a":1}'),
        (b'data:{"a":1}', b'{"a":1}'),
        (b"data: [DONE]", b"[DONE]"),
        (b"data:", b""),
        (b"data: ", b""),
        (b"", None),
        (b": keep-alive", None),
        (b"event: message", None),
        (b"id: 3", None),
        (b" data: 1", None),
        (b"Data: 1", None),
        (b"dat: 1", None),
    ],
)
def test_data_payload(line: bytes, payload: bytes | None) -> None:
    assert data_payload(line) == payload


def test_frames() -> None:
    assert frame(b"[DONE]") == DONE
    assert frame(b'{"a":1}') == b'data: {"a":1}\n\n'
    assert frame_json({"a": [1, "x"]}) == b'data: {"a":[1,"x"]}\n\n'
    assert data_payload(frame(b"x").rstrip(b"\n")) == b"x"
