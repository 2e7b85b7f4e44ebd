"""The pieces of the OpenAPI document that do not depend on the route table: the error shape,
the gateway's own answers (models, health), its request headers, the request schemas with the
running policy's limits, and one example body per endpoint naming a model the policy has."""

from __future__ import annotations

from typing import Any

from gateway.openai.parse import request_model
from gateway.openai.request import Endpoint
from gateway.policy.compile import CompiledPolicy
from gateway.security.limits_schema import limited_schemas

Schema = dict[str, Any]

ERROR: Schema = {
    "type": "object",
    "description": "Every error the gateway answers (errors.py); /admin/reload adds 'digest'.",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["message", "type", "param", "code"],
            "properties": {
                "message": {"type": "string"},
                "type": {"type": "string"},
                "param": {"type": ["string", "null"]},
                "code": {"type": ["string", "null"]},
            },
        }
    },
}
MODEL: Schema = {
    "type": "object",
    "required": ["id", "object", "created", "owned_by"],
    "properties": {
        "id": {"type": "string"},
        "object": {"const": "model"},
        "created": {"type": "integer"},
        "owned_by": {"type": "string"},
    },
}
MODEL_LIST: Schema = {
    "type": "object",
    "required": ["object", "data"],
    "properties": {
        "object": {"const": "list"},
        "data": {"type": "array", "items": {"$ref": "#/components/schemas/Model"}},
    },
}
READINESS: Schema = {
    "type": "object",
    "required": ["status", "pools"],
    "properties": {
        "status": {"enum": ["ready", "not_ready"]},
        "pools": {"type": "object", "additionalProperties": {"type": "boolean"}},
        "cache": {"const": "loading"},
    },
}
GATEWAY_SCHEMAS: dict[str, Schema] = {
    "Error": ERROR,
    "Model": MODEL,
    "ModelList": MODEL_LIST,
    "Readiness": READINESS,
}

# Schema component of each endpoint's request body (vLLM's own routes share one).
REQUEST_SCHEMAS: dict[Endpoint, str] = {
    "chat": "ChatRequest",
    "completions": "CompletionRequest",
    "embeddings": "EmbeddingsRequest",
    "responses": "ResponsesRequest",
    "tokenize": "PassThroughRequest",
    "detokenize": "PassThroughRequest",
    "rerank": "PassThroughRequest",
    "score": "PassThroughRequest",
}


def _header(name: str, schema: Schema, description: str) -> Schema:
    return {
        "name": name,
        "in": "header",
        "required": False,
        "schema": schema,
        "description": description,
    }


# As ``path/identify.py`` (priority, deadline), the cache stage and the rewrite stage read them.
GATEWAY_HEADERS = [
    _header(
        "x-gateway-priority",
        {"enum": ["critical", "standard", "sheddable"]},
        "Admission priority; a tenant's own priority is a ceiling (any case is accepted)",
    ),
    _header(
        "x-gateway-deadline-ms",
        {"type": "integer", "minimum": 1},
        "Refuse rather than answer later than this many milliseconds from now",
    ),
    _header("x-gateway-session", {"type": "string"}, "Keeps a session on one replica"),
    _header(
        "x-gateway-cache",
        {"type": "string", "examples": ["bypass", "refresh"]},
        "'bypass' skips the response cache, 'refresh' replaces its entry; others: default",
    ),
    _header(
        "x-gateway-rewrite",
        {"type": "string", "examples": ["off"]},
        "'off' sends the prompt as written (no rewriting, no compression); others: default",
    ),
]


def request_schemas(policy: CompiledPolicy) -> dict[str, Schema]:
    """The request models' JSON Schemas (their nested models hoisted into components), with the
    policy's input limits and its model names as examples of ``model``."""
    schemas: dict[str, Schema] = {}
    for name in dict.fromkeys(REQUEST_SCHEMAS.values()):
        endpoint = next(e for e, n in REQUEST_SCHEMAS.items() if n == name)
        schema = request_model(endpoint).model_json_schema(
            ref_template="#/components/schemas/{model}"
        )
        schemas.update(schema.pop("$defs", {}))
        schema["properties"]["model"]["examples"] = policy.model_names()
        schemas[name] = schema
    return limited_schemas(schemas, policy.source.limits)


def example_model(policy: CompiledPolicy, endpoint: Endpoint) -> str | None:
    """A model whose requests of ``endpoint`` reach a backend: a fixed pool's model whose pool
    serves it, else any model (auto models may choose any pool)."""
    names = policy.model_names()
    for name in names:
        pool = policy.models[name].pool
        if pool is not None and policy.pools[pool].serves(endpoint):
            return name
    return names[0] if names else None


def example_body(policy: CompiledPolicy, endpoint: Endpoint) -> Schema | None:
    """A request of ``endpoint`` the running policy serves (within its limits)."""
    model = example_model(policy, endpoint)
    if model is None:
        return None
    limits = policy.source.limits
    tokens = min(16, limits.max_tokens or 16)
    text = "Say hello."[: limits.max_message_chars or None]
    prompt = "Say hello."[: limits.max_prompt_chars or None]
    bodies: dict[Endpoint, Schema] = {
        "chat": {"messages": [{"role": "user", "content": text}], "max_tokens": tokens},
        "completions": {"prompt": prompt, "max_tokens": tokens},
        "embeddings": {"input": prompt},
        "responses": {"input": prompt, "max_output_tokens": tokens},
        "tokenize": {"prompt": prompt},
        "detokenize": {"tokens": [1, 2, 3]},
        "rerank": {"query": "hello", "documents": ["hello world", "goodbye"]},
        "score": {"text_1": "hello", "text_2": ["hello world", "goodbye"]},
    }
    return {"model": model, **bodies[endpoint]}
