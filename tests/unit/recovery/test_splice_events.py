"""A continuation's events made the first stream's, by table: the same id and creation
time, its role-only opening left out, its usage summed with what was relayed before; and
what a stream that may be continued keeps of its text (no server)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import orjson
import pytest

from gateway.path.exchange.events import EventRelay
from gateway.recovery.continuation import Relayed, chat_cut


def _lease(backend: str) -> Any:
    redactor = SimpleNamespace(redacts_content=False)
    request = SimpleNamespace(model="fast", endpoint="chat")
    return SimpleNamespace(
        ctx=SimpleNamespace(request=request, policy=SimpleNamespace(redactor=redactor)),
        backend=SimpleNamespace(name=backend),
    )


def _chunk(cid: str, delta: dict[str, Any], finish: str | None = None, **more: Any) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    event = {"id": cid, "created": 1 if cid == "one" else 2, "model": "m", "choices": [choice]}
    return b"data: " + orjson.dumps({**event, **more}) + b"\n\n"


def _events(raw: bytes) -> list[dict[str, Any]]:
    lines = [line for line in raw.split(b"\n") if line.startswith(b"data: {")]
    return [orjson.loads(line[6:]) for line in lines]


FIRST = [
    _chunk("one", {"role": "assistant", "content": ""}),
    _chunk("one", {"content": "The"}),
    _chunk("one", {"content": " queue"}),
]
# (the continuation's chunks) -> (its relayed contents, its usage as the client sees it)
CONTINUATIONS: dict[str, tuple[list[bytes], list[str], dict[str, int] | None]] = {
    "role-only opening left out, text relayed": (
        [_chunk("two", {"role": "assistant", "content": ""}), _chunk("two", {"content": " is"})],
        [" is"],
        None,
    ),
    "usage summed: its prompt held the two tokens relayed before": (
        [
            _chunk("two", {"content": " long"}, "stop"),
            b'data: {"id":"two","created":2,"model":"m","choices":[],"usage":'
            b'{"prompt_tokens":12,"completion_tokens":1,"total_tokens":13}}\n\n',
        ],
        [" long", ""],
        {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13},
    ),
}


@pytest.mark.parametrize(
    ("chunks", "contents", "usage"), CONTINUATIONS.values(), ids=CONTINUATIONS.keys()
)
def test_a_continuation_is_one_stream_with_the_first(
    chunks: list[bytes], contents: list[str], usage: dict[str, int] | None
) -> None:
    first = EventRelay(_lease("a"), None, Relayed())
    for raw in FIRST:
        first.feed(raw)
    assert first.relayed is not None
    assert (first.relayed.so_far, first.relayed.completion_tokens) == ("The queue", 2)
    after = first.continued(_lease("b"))
    out = _events(b"".join(after.feed(raw) for raw in chunks))
    assert [e["id"] for e in out] == ["one"] * len(out)
    assert [e["created"] for e in out] == [1] * len(out)
    assert [
        (e["choices"] or [{"delta": {"content": ""}}])[0]["delta"].get("content") for e in out
    ] == contents
    assert out[-1].get("usage") == usage
    assert first.relayed.so_far == "The queue" + "".join(contents)


def test_a_stream_that_cannot_be_continued_keeps_nothing() -> None:
    events = EventRelay(_lease("a"), None)
    for raw in FIRST:
        events.feed(raw)
    assert events.relayed is None


def test_an_error_ends_the_stream_without_done() -> None:
    events = EventRelay(_lease("a"), None)
    assert events.ending(None) == b"data: [DONE]\n\n"
    error = {"error": {"message": "cut", "type": "upstream_error", "code": "x", "param": None}}
    ended = events.ending(error)
    assert b"[DONE]" not in ended
    assert b'"code":"x"' in ended


def test_whitespace_the_continuation_writes_again_is_relayed_and_counted_once() -> None:
    first = EventRelay(_lease("a"), None, Relayed())
    for raw in [_chunk("one", {"content": "The"}), _chunk("one", {"content": " "})]:
        first.feed(raw)
    assert first.relayed is not None
    first.relayed.owe(chat_cut(first.relayed))  # "The" sent; its " " is written again
    after = first.continued(_lease("b"))
    chunks = [
        _chunk("two", {"role": "assistant", "content": ""}),
        _chunk("two", {"content": " "}),
        _chunk("two", {"content": "queue"}, "stop"),
        b'data: {"id":"two","created":2,"model":"m","choices":[],"usage":'
        b'{"prompt_tokens":11,"completion_tokens":2,"total_tokens":13}}\n\n',
    ]
    out = _events(b"".join(after.feed(raw) for raw in chunks))
    assert [(e["choices"] or [{}])[0].get("delta", {}).get("content") for e in out] == [
        "queue",
        None,
    ]
    assert out[-1]["usage"] == {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}
    assert first.relayed.so_far == "The queue"
