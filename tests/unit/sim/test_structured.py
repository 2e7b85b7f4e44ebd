"""The simulator's constrained answers, by tables: values that a JSON Schema validator accepts
for the schemas clients send (pydantic's, OpenAI's strict ones, refs, unions, formats), and
which reply a request's tools, tool choice and format ask for."""

from __future__ import annotations

import random
from typing import Any

import jsonschema
import orjson
import pytest
from pydantic import BaseModel

from loadtests.sim import tokenizer
from loadtests.sim.structured import (
    chat_reply,
    function_tools,
    reply_of,
    responses_reply,
    value_of,
)


class Address(BaseModel):
    street: str
    zip_code: int


class Person(BaseModel):
    name: str
    age: int
    email: str | None = None
    tags: list[str]
    home: Address
    friends: list[Address] = []


SCHEMAS: dict[str, dict[str, Any]] = {
    "strict object": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}},
        "required": ["city", "unit"],
        "additionalProperties": False,
    },
    "pydantic model with refs, optionals and lists": Person.model_json_schema(),
    "bounds and lengths": {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "minimum": 3, "maximum": 9},
            "x": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
            "s": {"type": "string", "minLength": 30, "maxLength": 40},
            "items": {"type": "array", "items": {"type": "boolean"}, "minItems": 3},
        },
        "required": ["n", "x", "s", "items"],
    },
    "formats": {
        "type": "object",
        "properties": {
            "when": {"type": "string", "format": "date-time"},
            "day": {"type": "string", "format": "date"},
        },
    },
    "type list and const": {
        "type": "object",
        "properties": {"a": {"type": ["null", "integer"]}, "b": {"const": "fixed"}},
        "required": ["a", "b"],
    },
    "allOf": {
        "allOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"type": "object", "properties": {"b": {"type": "integer"}}, "required": ["b"]},
        ]
    },
}


@pytest.mark.parametrize("schema", SCHEMAS.values(), ids=SCHEMAS)
def test_values_validate_against_their_schema(schema: dict[str, Any]) -> None:
    for seed in range(5):
        value = value_of(schema, random.Random(seed))
        jsonschema.validate(value, schema, format_checker=jsonschema.FormatChecker())


def test_a_recursive_schema_ends() -> None:
    tree = {
        "$defs": {
            "node": {
                "type": "object",
                "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
            }
        },
        "$ref": "#/$defs/node",
    }
    value = value_of(tree, random.Random(0))
    assert orjson.dumps(value)  # finite


WEATHER = {
    "type": "function",
    "function": {
        "name": "weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
CLOCK = {"type": "function", "function": {"name": "clock"}}
USER = [{"role": "user", "content": "hi"}]
AFTER_TOOL = [*USER, {"role": "tool", "content": "sunny", "tool_call_id": "1"}]
SCHEMA_FORMAT = {"type": "json_schema", "json_schema": {"name": "p", "schema": SCHEMAS["allOf"]}}
# id -> (chat request fields, the tool called (None: none), JSON content expected)
CHAT: dict[str, tuple[dict[str, Any], str | None, bool]] = {
    "plain chat": ({"messages": USER}, None, False),
    "tools, auto: the first tool": (
        {"messages": USER, "tools": [WEATHER, CLOCK]},
        "weather",
        False,
    ),
    "after the tool's result: text": ({"messages": AFTER_TOOL, "tools": [WEATHER]}, None, False),
    "required, after a result too": (
        {"messages": AFTER_TOOL, "tools": [WEATHER], "tool_choice": "required"},
        "weather",
        False,
    ),
    "a forced function": (
        {
            "messages": USER,
            "tools": [WEATHER, CLOCK],
            "tool_choice": {"type": "function", "function": {"name": "clock"}},
        },
        "clock",
        False,
    ),
    "tool_choice none": (
        {"messages": USER, "tools": [WEATHER], "tool_choice": "none"},
        None,
        False,
    ),
    "json_object": ({"messages": USER, "response_format": {"type": "json_object"}}, None, True),
    "json_schema": ({"messages": USER, "response_format": SCHEMA_FORMAT}, None, True),
    "text format": ({"messages": USER, "response_format": {"type": "text"}}, None, False),
}


@pytest.mark.parametrize(("body", "tool", "json"), CHAT.values(), ids=CHAT)
def test_chat_reply(body: dict[str, Any], tool: str | None, json: bool) -> None:
    reply = chat_reply(body, "prompt", 0)
    if tool is None and not json:
        assert reply is None
        return
    assert reply is not None
    assert (reply.tool.name if reply.tool is not None else None) == tool
    text = reply.tool.arguments if reply.tool is not None else reply.text
    value = orjson.loads(text)
    assert isinstance(value, dict)
    if body.get("response_format") == SCHEMA_FORMAT:
        jsonschema.validate(value, SCHEMAS["allOf"])
    assert "".join(reply.pieces()) == text
    assert len(reply.pieces()) == tokenizer.count_tokens(text)  # one piece a token


def test_responses_reply_reads_the_responses_shapes() -> None:
    flat = {"type": "function", "name": "weather", "parameters": WEATHER["function"]["parameters"]}
    asked = {"input": "hi", "tools": [flat]}
    reply = responses_reply(asked, "p", 0)
    assert reply is not None
    assert reply.tool is not None
    assert reply.tool.name == "weather"
    answered = {
        "input": [
            {"role": "user", "content": "hi"},
            {"type": "function_call", "call_id": "c", "name": "weather", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c", "output": "sunny"},
        ],
        "tools": [flat],
    }
    assert responses_reply(answered, "p", 0) is None
    schema = {"type": "json_schema", "name": "p", "schema": SCHEMAS["strict object"]}
    reply = responses_reply({"input": "hi", "text": {"format": schema}}, "p", 0)
    assert reply is not None
    assert reply.tool is None
    jsonschema.validate(orjson.loads(reply.text), SCHEMAS["strict object"])


def test_function_tools_skip_other_tools() -> None:
    tools = [WEATHER, {"type": "web_search"}, {"type": "function", "name": "flat"}, "junk"]
    assert [t["name"] for t in function_tools(tools)] == ["weather", "flat"]
    assert function_tools(None) == []


def test_the_same_prompt_gets_the_same_answer() -> None:
    first = reply_of([], None, {"type": "json_object"}, "user", "prompt", 0)
    again = reply_of([], None, {"type": "json_object"}, "user", "prompt", 0)
    other = reply_of([], None, {"type": "json_object"}, "user", "another prompt", 0)
    assert first == again != other
