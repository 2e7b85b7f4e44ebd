"""Plain token events relayed by their bytes, by table: which events qualify (everything else
takes the parsing way), the model name spliced in exactly where parsing would set it, and a
stream's template, which takes the same events and no others."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from gateway.openai.plain_events import (
    CHAT_TEXT,
    COMPLETION_TEXT,
    plain_token,
    template,
    text_marker,
    with_model,
)

PUBLIC = b'"bench"'


def _chat(content: str | None = " word", **more: Any) -> bytes:
    delta = {} if content is None else {"content": content}
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}
    event = {"id": "c-1", "object": "chat.completion.chunk", "created": 7, "model": "up",
             "choices": [choice]}  # fmt: skip
    return orjson.dumps({**event, **more})


def _parsed_way(payload: bytes) -> dict[str, Any]:
    """What the parsing way relays (``events.EventRelay._frame``): the top-level model set."""
    data = orjson.loads(payload)
    if "model" in data:
        data["model"] = "bench"
    assert isinstance(data, dict)
    return data


VLLM_CHAT = _chat()
# name -> (payload, marker): plain tokens, relayed by their bytes
PLAIN: dict[str, tuple[bytes, bytes]] = {
    "vLLM chat chunk": (VLLM_CHAT, CHAT_TEXT),
    "vLLM completions chunk": (
        b'{"id":"x","object":"text_completion","created":1,"model":"up","choices":'
        b'[{"index":0,"text":" the","logprobs":null,"finish_reason":null}]}',
        COMPLETION_TEXT,
    ),
    "no model key": (b'{"choices":[{"delta":{"content":"a"},"finish_reason":null}]}', CHAT_TEXT),
    "already the public name": (_chat(model="bench"), CHAT_TEXT),
    "the word model in the text": (_chat(' "model":"up" and model'), CHAT_TEXT),
    "a quote and a backslash in the text": (_chat('say "hi" \\ '), CHAT_TEXT),
    "multibyte text": (_chat("é😀"), CHAT_TEXT),
}
# name -> (payload, marker): everything else, parsed
PARSED: dict[str, tuple[bytes, bytes]] = {
    "empty text": (_chat(""), CHAT_TEXT),
    "no text: the finishing event": (_chat(None), CHAT_TEXT),
    "role-only opening": (
        b'{"id":"c","model":"up","choices":[{"delta":{"role":"assistant","content":""},'
        b'"finish_reason":null}]}',
        CHAT_TEXT,
    ),
    "finish reason": (
        b'{"model":"up","choices":[{"delta":{"content":"a"},"finish_reason":"stop"}]}',
        CHAT_TEXT,
    ),
    "usage": (_chat(usage={"prompt_tokens": 1, "completion_tokens": 2}), CHAT_TEXT),
    "usage null": (_chat(usage=None), CHAT_TEXT),
    "error key": (_chat(error={"message": "x"}), CHAT_TEXT),
    "error object": (_chat(object="error"), CHAT_TEXT),
    "space after the colon": (VLLM_CHAT.replace(b'"model":"up"', b'"model": "up"'), CHAT_TEXT),
    "model not a string": (VLLM_CHAT.replace(b'"model":"up"', b'"model":null'), CHAT_TEXT),
    "escape in the model name": (_chat(model='a"b'), CHAT_TEXT),
    "two model keys": (VLLM_CHAT[:-1] + b',"model":"again"}', CHAT_TEXT),
    "model after a nested object (llama.cpp's key order)": (
        b'{"choices":[{"finish_reason":null,"index":0,"delta":{"content":"Hi"}}],'
        b'"created":1,"id":"c","model":"up","object":"chat.completion.chunk"}',
        CHAT_TEXT,
    ),
    "a nested object's model only": (
        b'{"x":{"model":"inner"},"choices":[{"delta":{"content":"a"},"finish_reason":null}]}',
        CHAT_TEXT,
    ),
    "not an object": (b'["delta":{"content":"a"},"finish_reason":null]', CHAT_TEXT),
    "a completions marker on chat": (VLLM_CHAT, COMPLETION_TEXT),
}


@pytest.mark.parametrize(("payload", "marker"), PLAIN.values(), ids=PLAIN.keys())
def test_a_plain_token_is_relayed_as_the_parsing_way_would(payload: bytes, marker: bytes) -> None:
    out = plain_token(payload, marker, PUBLIC)
    assert out is not None
    assert orjson.loads(out) == _parsed_way(payload)


@pytest.mark.parametrize(("payload", "marker"), PARSED.values(), ids=PARSED.keys())
def test_anything_else_takes_the_parsing_way(payload: bytes, marker: bytes) -> None:
    assert plain_token(payload, marker, PUBLIC) is None


MODEL_CASES: dict[str, tuple[bytes, bytes | None]] = {
    "replaced": (b'{"a":1,"model":"up","b":2}', b'{"a":1,"model":"bench","b":2}'),
    "same length name": (b'{"model":"abcde"}', b'{"model":"bench"}'),
    "longer name": (b'{"model":"a-much-longer-name"}', b'{"model":"bench"}'),
    "no key: unchanged": (b'{"a":1}', b'{"a":1}'),
    # "model" as a value: left to the parsing way, which knows a key from a value
    "a value model only": (b'{"object":"model"}', None),
    "a value model after the key": (b'{"model":"up","b":"model"}', None),
    "unterminated": (b'{"model":"up', None),
}


@pytest.mark.parametrize(("payload", "expected"), MODEL_CASES.values(), ids=MODEL_CASES.keys())
def test_the_model_name_is_spliced_in(payload: bytes, expected: bytes | None) -> None:
    assert with_model(payload, PUBLIC) == expected


def test_markers_by_endpoint() -> None:
    assert [text_marker(e) for e in ("chat", "completions", "responses", "embeddings")] == [
        CHAT_TEXT,
        COMPLETION_TEXT,
        None,
        None,
    ]


def _frame(payload: bytes) -> bytes:
    return b"data: " + payload + b"\n\n"


def _made(payload: bytes = VLLM_CHAT) -> Any:
    public = plain_token(payload, CHAT_TEXT, PUBLIC)
    assert public is not None
    return template(payload, public, CHAT_TEXT)


# name -> (a later chunk of the stream, whether the template takes it)
LATER: dict[str, tuple[bytes, bool]] = {
    "another text": (_frame(_chat(" next")), True),
    "multibyte text": (_frame(_chat("é😀")), True),
    "a quote in the text": (_frame(_chat('"')), False),
    "empty text": (_frame(_chat("")), False),
    "the finishing event": (_frame(_chat(None)), False),
    "another id": (_frame(_chat(id="c-2")), False),
    "two events in one chunk": (_frame(_chat(" a")) + _frame(_chat(" b")), False),
    "half an event": (_frame(_chat(" a"))[:-30], False),
    "crlf": (_frame(_chat(" a")).replace(b"\n", b"\r\n"), False),
    "no blank line yet": (_frame(_chat(" a"))[:-1], False),
}


@pytest.mark.parametrize(("chunk", "taken"), LATER.values(), ids=LATER.keys())
def test_a_template_takes_the_same_events_and_no_others(chunk: bytes, taken: bool) -> None:
    made = _made()
    out = made.frame(chunk)
    assert (out is not None) == taken
    if out is not None:
        assert out.startswith(b"data: ")
        assert out.endswith(b"\n\n")
        assert orjson.loads(out[6:]) == _parsed_way(chunk[6:])


def test_no_template_from_a_text_with_an_escape() -> None:
    assert _made(_chat('a "quote"')) is None
    assert _made(_chat("a\nb")) is None


def test_the_public_name_already_there_relays_the_chunk_itself() -> None:
    made = _made(_chat(model="bench"))
    chunk = _frame(_chat(" next", model="bench"))
    assert made.frame(chunk) is chunk


# name -> (one line of a chunk that holds several events, whether the template takes it)
LINES: dict[str, tuple[bytes, bool]] = {
    "another text": (_frame(_chat(" next"))[:-2], True),
    "multibyte text": (_frame(_chat("é😀"))[:-2], True),
    "a quote in the text": (_frame(_chat('"'))[:-2], False),
    "empty text": (_frame(_chat(""))[:-2], False),
    "the finishing event": (_frame(_chat(None))[:-2], False),
    "another id": (_frame(_chat(id="c-2"))[:-2], False),
    "half an event": (_frame(_chat(" a"))[:-30], False),
    "the line with its break still on": (_frame(_chat(" a")), False),
    "the end of the stream": (b"data: [DONE]", False),
    "a comment": (b": keep-alive", False),
}


@pytest.mark.parametrize(("line", "taken"), LINES.values(), ids=LINES.keys())
def test_a_template_takes_the_lines_of_the_same_events_and_no_others(
    line: bytes, taken: bool
) -> None:
    made = _made()
    out = made.line(line)
    assert (out is not None) == taken
    if out is not None:
        assert out.startswith(b"data: ")
        assert out.endswith(b"\n\n")
        assert orjson.loads(out[6:]) == _parsed_way(line[6:])
        assert out == made.frame(line + b"\n\n")  # as the chunk of that one event
