"""parse_request: the checked fields, the pass-through of everything else, and the errors."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.errors import InvalidRequest
from gateway.openai.parse import parse_request
from gateway.openai.request import Endpoint

USER = [{"role": "user", "content": "hi"}]

# id -> (endpoint, body, expected model, expected stream)
VALID: dict[str, tuple[Endpoint, dict[str, Any], str, bool]] = {
    "chat minimal": ("chat", {"model": "m", "messages": USER}, "m", False),
    "chat streaming with options": (
        "chat",
        {"model": "m", "messages": USER, "stream": True, "stream_options": {"include_usage": True}},
        "m",
        True,
    ),
    "chat stream null": ("chat", {"model": "m", "messages": USER, "stream": None}, "m", False),
    "chat unknown fields kept": (
        "chat",
        {
            "model": "org/model-7b",
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": [{"type": "text", "text": "hi"}], "name": "bob"},
                {"role": "assistant", "content": None, "tool_calls": [{"id": "1"}]},
                {"role": "tool", "content": "42", "tool_call_id": "1"},
            ],
            "logit_bias": {"50256": -100},
            "response_format": {"type": "json_object"},
            "x_vendor": [1, {"a": None}],
            "temperature": 2,
            "top_p": 0.5,
            "n": 128,
            "seed": -1,
            "max_tokens": 1,
            "max_completion_tokens": 7,
        },
        "org/model-7b",
        False,
    ),
    "completions string prompt": ("completions", {"model": "m", "prompt": "x"}, "m", False),
    "completions token prompt": (
        "completions",
        {"model": "m", "prompt": [1, 2, 3], "stream": True, "echo": True, "best_of": 2},
        "m",
        True,
    ),
    "completions batch of prompts": (
        "completions",
        {"model": "m", "prompt": [[1, 2], [3]], "suffix": "!"},
        "m",
        False,
    ),
    "completions list of strings": (
        "completions",
        {"model": "m", "prompt": ["a", "b"]},
        "m",
        False,
    ),
    "embeddings text": ("embeddings", {"model": "e", "input": "a text"}, "e", False),
    "embeddings token ids, base64": (
        "embeddings",
        {"model": "e", "input": [[1, 2], [3]], "encoding_format": "base64", "dimensions": 8},
        "e",
        False,
    ),
    "responses text, streaming": (
        "responses",
        {"model": "r", "input": "hi", "stream": True, "max_output_tokens": 5, "store": False},
        "r",
        True,
    ),
    "responses items with instructions": (
        "responses",
        {"model": "r", "instructions": "be brief", "input": [{"role": "user", "content": "x"}]},
        "r",
        False,
    ),
    # JSON Schema's integers include integral floats: read as integers, forwarded as written.
    "integral floats where integers go": (
        "chat",
        {"model": "m", "messages": USER, "n": 2.0, "max_tokens": 16.0, "seed": -1.0},
        "m",
        False,
    ),
    "integral float token ids and dimensions": (
        "embeddings",
        {"model": "e", "input": [[1.0, 2], [3.0]], "dimensions": 186902.0},
        "e",
        False,
    ),
    "integral float completion token ids": (
        "completions",
        {"model": "m", "prompt": [1.0, 2.0], "max_tokens": 8.0},
        "m",
        False,
    ),
    "responses integral max_output_tokens": (
        "responses",
        {"model": "r", "input": "hi", "max_output_tokens": 5.0},
        "r",
        False,
    ),
    "tokenize passes through": ("tokenize", {"model": "t", "prompt": "hi"}, "t", False),
    "rerank passes through": ("rerank", {"model": "t", "query": "q", "documents": []}, "t", False),
}


@pytest.mark.parametrize(("endpoint", "body", "model", "stream"), VALID.values(), ids=VALID.keys())
def test_valid_request_parses_and_keeps_the_body(
    endpoint: Endpoint, body: dict[str, Any], model: str, stream: bool
) -> None:
    parsed = parse_request(endpoint, json.dumps(body).encode())

    assert parsed.endpoint == endpoint
    assert parsed.model == model
    assert parsed.stream is stream
    assert parsed.body == body


CHAT_OK = {"model": "m", "messages": USER}

# id -> (endpoint, raw body, expected param, message fragment)
INVALID: dict[str, tuple[Endpoint, bytes, str | None, str]] = {
    "empty body": ("chat", b"", None, "empty"),
    "whitespace body": ("chat", b" \n\t", None, "empty"),
    "invalid JSON": ("chat", b'{"model": ', None, "not valid JSON"),
    "JSON array": ("chat", b'[{"model": "m"}]', None, "must be a JSON object"),
    "JSON string": ("completions", b'"hello"', None, "must be a JSON object"),
    "missing model": ("chat", orjson.dumps({"messages": USER}), "model", "Missing required"),
    "empty model": ("chat", orjson.dumps({**CHAT_OK, "model": ""}), "model", "Invalid value"),
    "model not a string": ("chat", orjson.dumps({**CHAT_OK, "model": 7}), "model", "string"),
    "missing messages": ("chat", orjson.dumps({"model": "m"}), "messages", "Missing required"),
    "empty messages": ("chat", orjson.dumps({**CHAT_OK, "messages": []}), "messages", "at least 1"),
    "messages not a list": (
        "chat",
        orjson.dumps({**CHAT_OK, "messages": {"role": "user"}}),
        "messages",
        "valid list",
    ),
    "bad role": (
        "chat",
        orjson.dumps({**CHAT_OK, "messages": [*USER, {"role": "robot", "content": "x"}]}),
        "messages[1].role",
        "Invalid value",
    ),
    "missing role": (
        "chat",
        orjson.dumps({**CHAT_OK, "messages": [{"content": "x"}]}),
        "messages[0].role",
        "Missing required",
    ),
    "content wrong type": (
        "chat",
        orjson.dumps({**CHAT_OK, "messages": [{"role": "user", "content": 5}]}),
        "messages[0].content",
        "Invalid value",
    ),
    "stream as string": ("chat", orjson.dumps({**CHAT_OK, "stream": "true"}), "stream", "boolean"),
    "embeddings empty input": (
        "embeddings",
        orjson.dumps({"model": "e", "input": ""}),
        "input",
        "Invalid value",
    ),
    "embeddings stream": (
        "embeddings",
        orjson.dumps({"model": "e", "input": "x", "stream": True}),
        "stream",
        "Invalid value",
    ),
    "embeddings bad format": (
        "embeddings",
        orjson.dumps({"model": "e", "input": "x", "encoding_format": "hex"}),
        "encoding_format",
        "Invalid value",
    ),
    "responses missing input": (
        "responses",
        orjson.dumps({"model": "r"}),
        "input",
        "Missing required",
    ),
    "responses zero output tokens": (
        "responses",
        orjson.dumps({"model": "r", "input": "x", "max_output_tokens": 0}),
        "max_output_tokens",
        "Invalid value",
    ),
    "detokenize without model": (
        "detokenize",
        orjson.dumps({"tokens": [1]}),
        "model",
        "Missing required",
    ),
    "stream_options wrong type": (
        "chat",
        orjson.dumps({**CHAT_OK, "stream_options": {"include_usage": "yes"}}),
        "stream_options.include_usage",
        "boolean",
    ),
    "max_tokens 0": (
        "chat",
        orjson.dumps({**CHAT_OK, "max_tokens": 0}),
        "max_tokens",
        "greater than or equal to 1",
    ),
    "max_tokens as string": (
        "completions",
        orjson.dumps({"model": "m", "prompt": "x", "max_tokens": "5"}),
        "max_tokens",
        "integer",
    ),
    "max_completion_tokens 0": (
        "chat",
        orjson.dumps({**CHAT_OK, "max_completion_tokens": 0}),
        "max_completion_tokens",
        "greater than or equal to 1",
    ),
    "temperature 3": (
        "chat",
        orjson.dumps({**CHAT_OK, "temperature": 3}),
        "temperature",
        "less than or equal to 2",
    ),
    "temperature negative": (
        "completions",
        orjson.dumps({"model": "m", "prompt": "x", "temperature": -0.1}),
        "temperature",
        "greater than or equal to 0",
    ),
    "top_p above 1": (
        "chat",
        orjson.dumps({**CHAT_OK, "top_p": 1.5}),
        "top_p",
        "less than or equal to 1",
    ),
    "n 0": ("chat", orjson.dumps({**CHAT_OK, "n": 0}), "n", "greater than or equal to 1"),
    "missing prompt": ("completions", orjson.dumps({"model": "m"}), "prompt", "Missing required"),
    "prompt wrong type": (
        "completions",
        orjson.dumps({"model": "m", "prompt": 5}),
        "prompt",
        "Invalid value",
    ),
    "n fractional": ("chat", orjson.dumps({**CHAT_OK, "n": 2.5}), "n", "integer"),
    "n as boolean": ("chat", orjson.dumps({**CHAT_OK, "n": True}), "n", "integer"),
    "integral n over the model's bound": (
        "chat",
        orjson.dumps({**CHAT_OK, "n": 129.0}),
        "n",
        "less than or equal to 128",
    ),
    "dimensions fractional": (
        "embeddings",
        orjson.dumps({"model": "e", "input": "x", "dimensions": 8.5}),
        "dimensions",
        "integer",
    ),
    "temperature as string": (
        "chat",
        orjson.dumps({**CHAT_OK, "temperature": "0.5"}),
        "temperature",
        "number",
    ),
    "embeddings empty token list": (
        "embeddings",
        orjson.dumps({"model": "e", "input": [[1], []]}),
        "input",
        "Invalid value",
    ),
    "prompt list of floats": (
        "completions",
        orjson.dumps({"model": "m", "prompt": [1.5]}),
        "prompt",
        "Invalid value",
    ),
}


@pytest.mark.parametrize(
    ("endpoint", "raw", "param", "fragment"), INVALID.values(), ids=INVALID.keys()
)
def test_invalid_request_is_a_400_with_param(
    endpoint: Endpoint, raw: bytes, param: str | None, fragment: str
) -> None:
    with pytest.raises(InvalidRequest) as info:
        parse_request(endpoint, raw)

    err = info.value
    assert err.http_status() == 400
    assert err.param == param
    assert fragment in err.message
    body = err.body()["error"]
    assert body["type"] == "invalid_request_error"
    assert body["param"] == param
    if param is not None:
        assert f"'{param}'" in err.message
        assert err.code == "invalid_value"


def test_several_problems_are_counted_in_the_message() -> None:
    raw = orjson.dumps({"model": "", "messages": [], "max_tokens": 0})
    with pytest.raises(InvalidRequest) as info:
        parse_request("chat", raw)
    assert info.value.param == "model"
    assert "(2 more problem(s) in the request.)" in info.value.message


# --- property: unknown fields pass through untouched ----------------------------------------

KNOWN_FIELDS = {
    "model",
    "messages",
    "prompt",
    "stream",
    "stream_options",
    "max_tokens",
    "max_completion_tokens",
    "temperature",
    "top_p",
    "n",
    "seed",
}

_json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(exclude_categories=["Cs"]), max_size=20)
)
_json_values = st.recursive(
    _json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
_extra_keys = st.text(st.characters(exclude_categories=["Cs"]), max_size=16).filter(
    lambda k: k not in KNOWN_FIELDS
)


@settings(max_examples=150, deadline=None)
@given(extras=st.dictionaries(_extra_keys, _json_values, max_size=6), stream=st.booleans())
def test_extra_fields_are_kept_untouched(extras: dict[str, Any], stream: bool) -> None:
    body = {**extras, "model": "m", "messages": USER, "stream": stream}

    parsed = parse_request("chat", orjson.dumps(body))

    assert parsed.model == "m"
    assert parsed.stream is stream
    for key, value in extras.items():
        assert key in parsed.body
        assert parsed.body[key] == value
    assert orjson.dumps(parsed.body, option=orjson.OPT_SORT_KEYS) == orjson.dumps(
        body, option=orjson.OPT_SORT_KEYS
    )
