"""What the relay reads in each endpoint's answers (gateway/openai/endpoints.py), as tables."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from gateway.openai import endpoints as wire
from gateway.openai.messages import prompt_chars, requested_max_tokens, responses_messages
from gateway.openai.request import Endpoint
from gateway.rewrite import serialize

# id -> (event or body, (prompt, completion))
USAGE: dict[str, tuple[dict[str, Any], tuple[int | None, int | None]]] = {
    "chat": ({"usage": {"prompt_tokens": 5, "completion_tokens": 7}}, (5, 7)),
    "embeddings": ({"usage": {"prompt_tokens": 9, "total_tokens": 9}}, (9, None)),
    "responses body": ({"usage": {"input_tokens": 3, "output_tokens": 4}}, (3, 4)),
    "responses completed event": (
        {
            "type": "response.completed",
            "response": {"usage": {"input_tokens": 3, "output_tokens": 8}},
        },
        (3, 8),
    ),
    "responses created event": (
        {"type": "response.created", "response": {"usage": None}},
        (None, None),
    ),
    "negative ignored": ({"usage": {"prompt_tokens": -1, "completion_tokens": 2}}, (None, 2)),
    "none": ({"choices": []}, (None, None)),
}


@pytest.mark.parametrize(("obj", "expected"), USAGE.values(), ids=USAGE.keys())
def test_usage(obj: dict[str, Any], expected: tuple[int | None, int | None]) -> None:
    assert wire.usage(obj) == expected


# id -> (event, carries output)
TOKENS: dict[str, tuple[dict[str, Any], bool]] = {
    "chat content": ({"choices": [{"delta": {"content": "x"}}]}, True),
    "chat role only": ({"choices": [{"delta": {"role": "assistant", "content": ""}}]}, False),
    "completion text": ({"choices": [{"text": "x"}]}, True),
    "tool call": ({"choices": [{"delta": {"tool_calls": [{"id": "1"}]}}]}, True),
    "responses text delta": ({"type": "response.output_text.delta", "delta": "x"}, True),
    "responses empty delta": ({"type": "response.output_text.delta", "delta": ""}, False),
    "responses arguments delta": (
        {"type": "response.function_call_arguments.delta", "delta": "{"},
        True,
    ),
    "responses created": ({"type": "response.created", "response": {}}, False),
}


@pytest.mark.parametrize(("event", "expected"), TOKENS.values(), ids=TOKENS.keys())
def test_carries_token(event: dict[str, Any], expected: bool) -> None:
    assert wire.carries_token(event) is expected


@pytest.mark.parametrize(
    ("obj", "always", "expected"),
    [
        ({"model": "backend"}, False, {"model": "public"}),
        ({"count": 2}, False, {"count": 2}),  # tokenize answers name no model: none added
        ({"count": 2}, True, {"count": 2, "model": "public"}),
        (
            {"type": "response.created", "response": {"model": "backend", "id": "r"}},
            False,
            {"type": "response.created", "response": {"model": "public", "id": "r"}},
        ),
    ],
)
def test_show_public_model(obj: dict[str, Any], always: bool, expected: dict[str, Any]) -> None:
    wire.show_public_model(obj, "public", always=always)
    assert obj == expected


@pytest.mark.parametrize(
    ("endpoint", "always_named", "typed"),
    [
        ("chat", True, False),
        ("embeddings", True, False),
        ("responses", True, True),
        ("tokenize", False, False),
        ("score", False, False),
    ],
)
def test_endpoint_facts(endpoint: Endpoint, always_named: bool, typed: bool) -> None:
    assert wire.always_named(endpoint) is always_named
    assert wire.typed_events(endpoint) is typed
    assert wire.UPSTREAM_PATHS[endpoint].startswith("/")


def test_terminal_events() -> None:
    ends = [wire.is_terminal({"type": t}) for t in sorted(wire.TERMINAL_EVENTS)]
    assert ends == [True, True, True]
    assert not wire.is_terminal({"type": "response.output_text.done"})


def test_error_frames() -> None:
    body = {"error": {"message": "late", "type": "timeout", "param": None, "code": "idle_timeout"}}
    assert wire.error_frame("chat", body, 3) == b"data: " + orjson.dumps(body) + b"\n\n"
    typed = wire.error_frame("responses", body, 3)
    head, data = typed.split(b"\n", 1)
    assert head == b"event: error"
    event = orjson.loads(data.removeprefix(b"data: "))
    assert event == {
        "type": "error",
        "code": "idle_timeout",
        "message": "late",
        "param": None,
        "sequence_number": 3,
    }


def test_responses_as_messages() -> None:
    body = {
        "instructions": "be brief",
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "hello"}]},
            {"type": "function_call_output", "call_id": "c", "output": "42"},
        ],
        "max_output_tokens": 9,
    }
    assert responses_messages(body) == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "input_text", "text": "hello"}]},
        {"role": "user", "content": "42"},
    ]
    assert responses_messages({"input": "hi"}) == [{"role": "user", "content": "hi"}]
    assert prompt_chars(body) == len("be brief") + len("hello") + len("42")
    assert requested_max_tokens(body) == 9


@pytest.mark.parametrize(
    ("body", "text"),
    [
        ({"instructions": "sys", "input": "hello"}, "<|system|>\nsys\n<|user|>\nhello\n"),
        ({"input": [{"role": "user", "content": "hi"}]}, "<|user|>\nhi\n"),
        ({"input": ["a text", "another"]}, ""),  # embeddings: no shared prefix to route by
    ],
)
def test_prefix_routing_text_of_other_endpoints(body: dict[str, Any], text: str) -> None:
    assert serialize(body).text == text
