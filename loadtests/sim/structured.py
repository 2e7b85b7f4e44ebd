"""What a real engine answers when the request constrains the output: a tool call, JSON mode,
or a JSON schema (vLLM's structured outputs), as a value the replica then emits token by
token like any text.

Algorithm: ``reply_of(request)`` reads the request's ``tools`` / ``tool_choice`` and its
``response_format`` (chat) or ``text.format`` (Responses API) and returns a ``Reply``:

- a tool call when tools are given and ``tool_choice`` is not ``"none"``: the named function
  when one is forced, else (``"required"``, ``"auto"``) the first tool; under ``"auto"`` only
  while the conversation does not end with a tool's result (then the model answers in text,
  so an agent loop ends). Its arguments are a value of the function's ``parameters`` schema;
- JSON text: a value of the ``json_schema`` given, or an object ``{"answer": ...}`` for
  ``json_object``;
- None otherwise (free text from the pseudo-tokeniser).

Values of a schema (``value_of``): objects get every declared property (required or not, so
``additionalProperties: false`` and OpenAI's strict mode hold), arrays ``minItems`` (at
least one) items, strings the ``enum``/``const`` or a few words within ``minLength`` /
``maxLength`` (a value of its ``format`` when it has a known one), numbers the middle of
their bounds, and ``$ref`` (``#/$defs/...``, ``#/definitions/...``), ``anyOf`` / ``oneOf``
(the first branch that is not null), ``allOf`` (merged properties) and type lists are
followed. Words are drawn from a generator seeded
by the prompt, so a prompt always gets the same answer.

Parameters: none; ``MAX_DEPTH`` bounds recursive schemas.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from loadtests.sim import tokenizer

MAX_DEPTH = 6
Schema = Mapping[str, Any]


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: str  # JSON text, emitted token by token


@dataclass(frozen=True)
class Reply:
    """The constrained output: a tool call, or JSON text as the message's content."""

    text: str
    tool: ToolCall | None = None

    def pieces(self) -> list[str]:
        """The output's tokens: the arguments of a call, else the text."""
        return tokenizer.pieces(self.tool.arguments if self.tool is not None else self.text)


def reply_of(
    tools: Sequence[Mapping[str, Any]],
    tool_choice: object,
    response_format: Mapping[str, Any] | None,
    last_role: str | None,
    prompt: str,
    seed: int,
) -> Reply | None:
    """The reply the request asks for (None: free text). ``tools`` are ``(name, parameters)``
    mappings (``function_tools`` reads both APIs' shapes)."""
    rng = random.Random(tokenizer.output_seed(prompt, seed ^ 0x7007))
    tool = _chosen_tool(tools, tool_choice, last_role)
    if tool is not None:
        parameters = tool.get("parameters") or {"type": "object", "properties": {}}
        arguments = orjson.dumps(value_of(parameters, rng)).decode()
        return Reply("", ToolCall(str(tool["name"]), arguments))
    if response_format is None:
        return None
    kind = response_format.get("type")
    if kind == "json_schema":
        schema = response_format.get("schema")
        if schema is None:  # chat: {"type": "json_schema", "json_schema": {"schema": ...}}
            schema = (response_format.get("json_schema") or {}).get("schema")
        return Reply(orjson.dumps(value_of(schema or {"type": "object"}, rng)).decode())
    if kind == "json_object":
        return Reply(orjson.dumps({"answer": _words(rng, 6)}).decode())
    return None


def chat_reply(body: Mapping[str, Any], prompt: str, seed: int) -> Reply | None:
    """The reply a chat completion request asks for."""
    messages = body.get("messages") or [{}]
    last = messages[-1] if isinstance(messages[-1], dict) else {}
    response_format = body.get("response_format")
    return reply_of(
        function_tools(body.get("tools")),
        body.get("tool_choice"),
        response_format if isinstance(response_format, dict) else None,
        last.get("role"),
        prompt,
        seed,
    )


def responses_reply(body: Mapping[str, Any], prompt: str, seed: int) -> Reply | None:
    """The reply a Responses API request asks for (``text.format``; the last input item's
    type or role says whether a tool's result came last)."""
    items = body.get("input")
    last = items[-1] if isinstance(items, list) and items and isinstance(items[-1], dict) else {}
    text = body.get("text")
    fmt = text.get("format") if isinstance(text, dict) else None
    return reply_of(
        function_tools(body.get("tools")),
        body.get("tool_choice"),
        fmt if isinstance(fmt, dict) else None,
        last.get("type") if last.get("type") not in (None, "message") else last.get("role"),
        prompt,
        seed,
    )


def function_tools(tools: object) -> list[dict[str, Any]]:
    """``{"name", "parameters"}`` of each function tool, from chat's shape
    (``{"type": "function", "function": {...}}``) or the Responses API's (flat)."""
    found = []
    for tool in tools if isinstance(tools, list) else []:
        if not isinstance(tool, dict) or tool.get("type", "function") != "function":
            continue
        function = tool.get("function", tool)
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            found.append({"name": function["name"], "parameters": function.get("parameters")})
    return found


def _chosen_tool(
    tools: Sequence[Mapping[str, Any]], choice: object, last_role: str | None
) -> Mapping[str, Any] | None:
    if not tools or choice == "none":
        return None
    if isinstance(choice, dict):
        forced = choice.get("name") or (choice.get("function") or {}).get("name")
        return next((t for t in tools if t["name"] == forced), None)
    if choice == "required":
        return tools[0]
    return tools[0] if last_role not in ("tool", "function_call_output") else None


def value_of(schema: Schema, rng: random.Random, root: Schema | None = None, depth: int = 0) -> Any:
    """A value valid against ``schema`` (the subset of JSON Schema described above)."""
    root = schema if root is None else root
    schema = _resolved(schema, root)
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][rng.randrange(len(schema["enum"]))]
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and branches:
            chosen = next((b for b in branches if _resolved(b, root).get("type") != "null"), None)
            return value_of(chosen or branches[0], rng, root, depth)
    if isinstance(schema.get("allOf"), list):
        merged: dict[str, Any] = {"type": "object", "properties": {}}
        for part in schema["allOf"]:
            merged["properties"].update(_resolved(part, root).get("properties", {}))
        return value_of(merged, rng, root, depth)
    kind = schema.get("type", "object" if "properties" in schema else "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    return _typed(str(kind), schema, rng, root, depth)


def _typed(kind: str, schema: Schema, rng: random.Random, root: Schema, depth: int) -> Any:
    if kind == "object":
        properties = schema.get("properties") or {}
        if depth >= MAX_DEPTH:
            return {}
        return {name: value_of(sub, rng, root, depth + 1) for name, sub in properties.items()}
    if kind == "array":
        count = max(1, int(schema.get("minItems", 1)))
        items = schema.get("items") or {"type": "string"}
        if depth >= MAX_DEPTH:
            return []
        return [value_of(items, rng, root, depth + 1) for _ in range(count)]
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        high = schema.get("maximum", schema.get("exclusiveMaximum", low + 100))
        middle = (low + high) / 2
        return int(middle) if kind == "integer" else round(middle, 2)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "null":
        return None
    return _string(schema, rng)


# Strings of a ``format``: a value that parses as one (a pydantic ``datetime``, ``date``...).
FORMATS = {
    "date-time": "2026-01-02T03:04:05Z",
    "date": "2026-01-02",
    "time": "03:04:05",
    "email": "someone@example.com",
    "uri": "https://example.com/page",
    "uuid": "123e4567-e89b-42d3-a456-426614174000",
}


def _string(schema: Schema, rng: random.Random) -> str:
    if schema.get("format") in FORMATS:
        return FORMATS[schema["format"]]
    low, high = int(schema.get("minLength", 1)), schema.get("maxLength")
    text = _words(rng, 3)
    while len(text) < low:
        text += " " + _words(rng, 1)
    return text if high is None else text[: int(high)]


def _words(rng: random.Random, count: int) -> str:
    return " ".join(tokenizer.WORDS[rng.randrange(len(tokenizer.WORDS))] for _ in range(count))


def _resolved(schema: Schema, root: Schema) -> Schema:
    """``schema`` with a local ``$ref`` followed (a few hops at most)."""
    for _ in range(MAX_DEPTH):
        ref = schema.get("$ref")
        if not isinstance(ref, str) or not ref.startswith("#/"):
            return schema
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        schema = target if isinstance(target, dict) else {}
    return schema
