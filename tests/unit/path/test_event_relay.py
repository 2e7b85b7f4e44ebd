"""A stream relayed with plain token events taken by their bytes is the stream the parsing way
relays, however it is chunked: the same events for the client, the same tokens counted, the
same text kept for a continuation, the same answer for the cache (no server)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import orjson
import pytest

from gateway.cache.store.capture import AnswerCapture
from gateway.openai import plain_events
from gateway.path.exchange.events import EventRelay
from gateway.recovery.continuation import Relayed


def _lease(endpoint: str) -> Any:
    redactor = SimpleNamespace(redacts_content=False)
    request = SimpleNamespace(model="bench", endpoint=endpoint)
    return SimpleNamespace(
        ctx=SimpleNamespace(request=request, policy=SimpleNamespace(redactor=redactor)),
        backend=SimpleNamespace(name="b"),
    )


def _event(choice: dict[str, Any], **more: Any) -> bytes:
    event = {"id": "c-1", "object": "chat.completion.chunk", "created": 7, "model": "up",
             "choices": [choice], **more}  # fmt: skip
    return b"data: " + orjson.dumps(event) + b"\n\n"


def _delta(delta: dict[str, Any], finish: str | None = None) -> bytes:
    return _event({"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish})


TEXTS = [" The", " queue", ' "is"', " long", "\\", " é😀", "", " ."]
CHAT = (
    _delta({"role": "assistant", "content": ""})
    + b"".join(_delta({"content": t}) for t in TEXTS)
    + b": a comment\n\n"
    + _delta({}, "stop")
    + b'data: {"id":"c-1","object":"chat.completion.chunk","created":7,"model":"up",'
    b'"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}}\n\n'
    + b"data: [DONE]\n\n"
)
COMPLETIONS = (
    b"".join(
        b'data: {"id":"x","object":"text_completion","created":1,"model":"up","choices":'
        b'[{"index":0,"text":'
        + orjson.dumps(t)
        + b',"logprobs":null,"finish_reason":'
        + (b'"length"' if i == len(TEXTS) - 1 else b"null")
        + b"}]}\n\n"
        for i, t in enumerate(TEXTS)
    )
    + b"data: [DONE]\n\n"
)
STREAMS = {"chat": (CHAT, "chat"), "completions": (COMPLETIONS, "completions")}


def _relay(endpoint: str, chunks: list[bytes], parse_all: bool) -> tuple[Any, ...]:
    answers: list[dict[str, Any]] = []
    capture = AnswerCapture(endpoint, answers.append)
    events = EventRelay(_lease(endpoint), capture, Relayed())
    if parse_all:
        events._marker = None  # every event the parsing way
    out = b"".join(events.feed(chunk) for chunk in chunks)
    out += events.feed(None)
    capture.finish()
    assert events.relayed is not None
    relayed = events.relayed
    frames = [orjson.loads(line[6:]) for line in out.split(b"\n\n") if line.startswith(b"data: {")]
    kept = (relayed.so_far, relayed.completion_tokens, relayed.stream_id, relayed.created)
    counts = (events.token_events, events.events, events.usage, events.done, events.error)
    return frames, kept, counts, answers


def _chunkings(data: bytes) -> list[list[bytes]]:
    events = [e + b"\n\n" for e in data.split(b"\n\n") if e]
    ways = [[data], events, [data[i : i + 1] for i in range(len(data))]]
    ways += [[data[:i], data[i:]] for i in range(0, len(data), 7)]
    return ways


@pytest.mark.parametrize(("data", "endpoint"), STREAMS.values(), ids=STREAMS.keys())
def test_the_same_stream_as_the_parsing_way_however_chunked(data: bytes, endpoint: str) -> None:
    expected = _relay(endpoint, [data], parse_all=True)
    frames, kept, counts, answers = expected
    assert {f["model"] for f in frames} == {"bench"}
    assert kept[0] == "".join(TEXTS)
    assert counts[0] == len([t for t in TEXTS if t])
    assert len(answers) == (1 if endpoint == "chat" else 0)  # "length" is not stored
    for chunks in _chunkings(data):
        assert _relay(endpoint, chunks, parse_all=False) == expected


def test_event_by_event_most_tokens_go_unparsed() -> None:
    events = EventRelay(_lease("chat"), None, Relayed())
    for t in [" a", " b", " c", " d"]:
        events.feed(_delta({"content": t}))
    assert events._template is not None
    assert events.relayed is not None
    assert events.relayed._kept
    assert events.relayed.so_far == " a b c d"
    assert not events.relayed._kept


def test_secrets_are_redacted_from_every_plain_token() -> None:
    lease = _lease("chat")
    lease.ctx.policy.redactor = SimpleNamespace(
        redacts_content=True, content=lambda raw: raw.replace(b"sekret", b"[REDACTED]")
    )
    events = EventRelay(lease, None)
    out = b"".join(events.feed(_delta({"content": t})) for t in [" a", " sekret", " sekret"])
    assert b"sekret" not in out
    assert out.count(b"[REDACTED]") == 2
    assert events.token_events == 3


def test_several_events_a_chunk_go_by_the_template_too(monkeypatch: pytest.MonkeyPatch) -> None:
    checked: list[bytes] = []
    plain_token = plain_events.plain_token

    def counted(payload: bytes, marker: bytes, public: bytes) -> bytes | None:
        checked.append(payload)
        return plain_token(payload, marker, public)

    monkeypatch.setattr(plain_events, "plain_token", counted)
    events = EventRelay(_lease("chat"), None)
    events.feed(_delta({"content": " a"}))  # makes the template
    out = events.feed(b"".join(_delta({"content": t}) for t in [" b", " c", ' "d"', " e"]))
    assert len(checked) == 2  # the first event, and the one with a quote in its text
    assert events.token_events == 5
    assert [orjson.loads(f[6:])["choices"][0]["delta"]["content"] for f in
            out.split(b"\n\n") if f] == [" b", " c", ' "d"', " e"]  # fmt: skip
    assert {orjson.loads(f[6:])["model"] for f in out.split(b"\n\n") if f} == {"bench"}
