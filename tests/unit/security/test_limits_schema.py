"""The policy's input limits in the OpenAPI document agree with the checks that enforce them:
for every keyword the document gets, a request at the bound is valid for the document and
passes ``apply_input_limits``, and one past it is invalid for both."""

from __future__ import annotations

from typing import Any

import jsonschema_rs
import orjson
import pytest

from gateway.errors import InvalidRequest
from gateway.openai.parse import parse_request, request_model
from gateway.openai.request import Endpoint
from gateway.schema import InputLimits
from gateway.security.input_limits import apply_input_limits
from gateway.security.limits_schema import Bound, bounds, limited_schemas, notes

# Every limit set, each to a small number of its own.
LIMITS = InputLimits(
    max_messages=3,
    max_message_chars=11,
    max_prompt_chars=13,
    max_tokens=17,
    max_tokens_action="refuse",
    max_n=5,
    max_dimensions=19,
)
USER = {"role": "user", "content": "hi"}
ENDPOINTS: dict[str, Endpoint] = {
    "ChatRequest": "chat",
    "CompletionRequest": "completions",
    "EmbeddingsRequest": "embeddings",
    "ResponsesRequest": "responses",
    "PassThroughRequest": "tokenize",
}
BASE: dict[str, dict[str, Any]] = {
    "ChatRequest": {"model": "m", "messages": [USER]},
    "CompletionRequest": {"model": "m", "prompt": "x"},
    "EmbeddingsRequest": {"model": "m", "input": "x"},
    "ResponsesRequest": {"model": "m", "input": "x"},
}


def _schemas() -> dict[str, Any]:
    schemas: dict[str, Any] = {}
    for name, endpoint in ENDPOINTS.items():
        schema = request_model(endpoint).model_json_schema(
            ref_template="#/components/schemas/{model}"
        )
        schemas.update(schema.pop("$defs", {}))
        schemas[name] = schema
    return schemas


def _value(rule: Bound, size: int) -> object:
    if rule.branch == "integer":
        return size
    if rule.branch == "string":
        return "a" * size
    return [USER if rule.field == "messages" else 1] * size


def _request(rule: Bound, size: int) -> tuple[str, dict[str, Any]]:
    """The request schema and a body whose bounded value has ``size``."""
    if rule.schema == "Message":
        return "ChatRequest", {
            **BASE["ChatRequest"],
            "messages": [{"role": "user", "content": _value(rule, size)}],
        }
    return rule.schema, {**BASE[rule.schema], rule.field: _value(rule, size)}


def _document_accepts(schemas: dict[str, Any], name: str, body: dict[str, Any]) -> bool:
    root = {"$ref": f"#/components/schemas/{name}", "components": {"schemas": schemas}}
    return bool(jsonschema_rs.validator_for(root).is_valid(body))


def _gateway_accepts(name: str, body: dict[str, Any]) -> bool:
    try:
        apply_input_limits(parse_request(ENDPOINTS[name], orjson.dumps(body)), LIMITS)
    except InvalidRequest:
        return False
    return True


RULES = bounds(LIMITS)


@pytest.mark.parametrize("rule", RULES, ids=[f"{r.schema}.{r.field}:{r.keyword}" for r in RULES])
def test_the_document_and_the_gateway_draw_the_line_at_the_same_place(rule: Bound) -> None:
    schemas = limited_schemas(_schemas(), LIMITS)
    at = _request(rule, rule.value)
    over = _request(rule, rule.value + 1)
    assert _document_accepts(schemas, *at)
    assert _gateway_accepts(*at)
    assert not _document_accepts(schemas, *over)
    assert not _gateway_accepts(*over)


def test_every_limit_is_in_the_document() -> None:
    fields = {(r.schema, r.field) for r in RULES}
    assert ("ChatRequest", "n") in fields
    assert ("CompletionRequest", "n") in fields
    assert ("ResponsesRequest", "max_output_tokens") in fields
    assert ("EmbeddingsRequest", "dimensions") in fields
    assert ("ChatRequest", "messages") in fields
    assert ("Message", "content") in fields
    assert {n.field for n in notes(LIMITS)} == {"content", "prompt", "input", None}


def test_a_clamped_cap_is_told_not_bounded() -> None:
    clamp = InputLimits(max_tokens=17, max_tokens_action="clamp")
    schemas = limited_schemas(_schemas(), clamp)
    assert not [r for r in bounds(clamp) if "tokens" in r.field]
    chat = schemas["ChatRequest"]["properties"]["max_tokens"]
    assert "lowers it to 17" in chat["description"]
    body = {**BASE["ChatRequest"], "max_tokens": 500}
    assert _document_accepts(schemas, "ChatRequest", body)


def test_the_model_bound_stays_when_the_policy_is_looser() -> None:
    schemas = limited_schemas(_schemas(), InputLimits(max_n=128))
    assert {"maximum": 128, "minimum": 1, "type": "integer"} in schemas["ChatRequest"][
        "properties"
    ]["n"]["anyOf"]


def test_the_request_schemas_are_not_changed_in_place() -> None:
    schemas = _schemas()
    before = orjson.dumps(schemas)
    limited_schemas(schemas, LIMITS)
    assert orjson.dumps(schemas) == before
