"""``simple_chat`` says True only for chat bodies the request model accepts as they are: a
table of shapes on either side of each check, and generated bodies, each compared with the
model itself; ``parse_request`` gives the same request either way."""

from __future__ import annotations

import json
from typing import Any, get_args

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from gateway.openai.parse import ChatRequest, Role, parse_request
from gateway.openai.simple_chat import ROLES, simple_chat

USER = {"role": "user", "content": "hi"}
BASE: dict[str, Any] = {"model": "m", "messages": [USER]}

# id -> (fields over BASE, simple). Simple ones the model must accept; the others go to it.
SHAPES: dict[str, tuple[dict[str, Any], bool]] = {
    "the usual": ({}, True),
    "streamed, with usage": ({"stream": True, "stream_options": {"include_usage": True}}, True),
    "not streamed": ({"stream": False}, True),
    "nulls where the model allows them": (
        {"stream": None, "temperature": None, "max_tokens": None, "stream_options": None},
        True,
    ),
    "sampling at its bounds": ({"temperature": 0, "top_p": 1.0}, True),
    "temperature 2": ({"temperature": 2.0}, True),
    "whole numbers": ({"max_tokens": 1, "max_completion_tokens": 7, "n": 128, "seed": -3}, True),
    "a huge seed": ({"seed": 2**70}, True),
    "extras of any kind": ({"tools": [{"x": 1}], "user": 5, "fake": {"ttft_s": 0}}, True),
    "every role, content null, parts or absent": (
        {
            "messages": [{"role": r, "content": None} for r in sorted(ROLES)]
            + [
                {"role": "user", "content": [{"type": "text", "text": "a"}]},
                {"role": "assistant", "tool_calls": []},
                {"role": "user", "content": []},
            ]
        },
        True,
    ),
    "stream_options with extras": ({"stream_options": {"x": 1}}, True),
    # Not simple: the model decides (it refuses most, converts some).
    "no model": ({"model": None}, False),
    "empty model": ({"model": ""}, False),
    "model not a string": ({"model": 3}, False),
    "stream a string": ({"stream": "yes"}, False),
    "stream 1": ({"stream": 1}, False),
    "temperature over 2": ({"temperature": 2.5}, False),
    "temperature negative": ({"temperature": -0.1}, False),
    "temperature a bool": ({"temperature": True}, False),
    "temperature a string": ({"temperature": "1"}, False),
    "top_p over 1": ({"top_p": 1.5}, False),
    "max_tokens 0": ({"max_tokens": 0}, False),
    "max_tokens an integral float (converted by the model)": ({"max_tokens": 5.0}, False),
    "max_tokens a bool": ({"max_tokens": True}, False),
    "n over 128": ({"n": 129}, False),
    "seed a string": ({"seed": "1"}, False),
    "stream_options a list": ({"stream_options": []}, False),
    "include_usage a string": ({"stream_options": {"include_usage": "y"}}, False),
    "no messages": ({"messages": None}, False),
    "messages empty": ({"messages": []}, False),
    "messages an object": ({"messages": USER}, False),
    "a message not an object": ({"messages": ["hi"]}, False),
    "no role": ({"messages": [{"content": "hi"}]}, False),
    "an unknown role": ({"messages": [{"role": "robot", "content": "hi"}]}, False),
    "a role not a string": ({"messages": [{"role": ["user"], "content": "hi"}]}, False),
    "content a number": ({"messages": [{"role": "user", "content": 1}]}, False),
    "content parts not objects": ({"messages": [{"role": "user", "content": ["hi"]}]}, False),
}


def _accepted(body: dict[str, Any]) -> bool:
    try:
        ChatRequest.model_validate(body)
    except ValidationError:
        return False
    return True


def test_roles_are_the_models() -> None:
    assert frozenset(get_args(Role)) == ROLES


@pytest.mark.parametrize(("fields", "simple"), SHAPES.values(), ids=SHAPES.keys())
def test_simple_only_where_the_model_accepts(fields: dict[str, Any], simple: bool) -> None:
    body = {**BASE, **fields}
    assert simple_chat(body) is simple
    if simple:
        assert _accepted(body)


@pytest.mark.parametrize(("fields", "simple"), SHAPES.values(), ids=SHAPES.keys())
def test_parse_gives_what_the_model_gives(fields: dict[str, Any], simple: bool) -> None:
    body = {**BASE, **fields}
    if not _accepted(body):
        return  # the model's errors: test_parse.py
    parsed = parse_request("chat", json.dumps(body).encode())
    checked = ChatRequest.model_validate(body)
    assert (parsed.model, parsed.stream, parsed.body) == (checked.model, bool(checked.stream), body)


_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 200), st.sampled_from([0.0, 0.5, 1.0, 2.0, 2.5]),
    st.floats(allow_nan=True), st.text(max_size=3), st.sampled_from(["user", "system", "x"]),
    st.lists(st.dictionaries(st.sampled_from(["type", "text"]), st.text(max_size=2)), max_size=2),
    st.dictionaries(st.sampled_from(["include_usage", "x"]), st.none() | st.booleans()),
)  # fmt: skip
_MESSAGE = st.dictionaries(st.sampled_from(["role", "content", "name"]), _VALUES)
_FIELDS = ["model", "stream", "temperature", "top_p", "max_tokens", "max_completion_tokens",
           "n", "seed", "stream_options", "user"]  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(
    st.dictionaries(st.sampled_from(_FIELDS), _VALUES),
    st.one_of(st.lists(_MESSAGE, max_size=3), _VALUES),
)
def test_generated_bodies_simple_only_where_the_model_accepts(
    fields: dict[str, Any], messages: object
) -> None:
    body = {"model": "m", **fields, "messages": messages}
    if simple_chat(body):
        assert _accepted(body)
