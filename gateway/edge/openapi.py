"""The gateway's OpenAPI 3.1 document (served at ``GET /openapi.json``).

Request bodies come from the same pydantic models that validate them (``openai/parse.py``), so
the document cannot drift from what the gateway accepts; unknown fields are allowed, as on
the wire. Every error response uses the one OpenAI error shape of ``errors.py``.
"""

from __future__ import annotations

from typing import Any

from gateway.openai.parse import (
    ChatRequest,
    CompletionRequest,
    EmbeddingsRequest,
    PassThroughRequest,
    ResponsesRequest,
)

_ERROR = {
    "type": "object",
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
_ERROR_REF = {"$ref": "#/components/schemas/Error"}
_ANY_JSON = {"application/json": {"schema": {"type": "object"}}}


def _errors(*statuses: int) -> dict[str, Any]:
    content = {"application/json": {"schema": _ERROR_REF}}
    return {str(s): {"description": "OpenAI-shaped error", "content": content} for s in statuses}


def _generation(schema: str, summary: str) -> dict[str, Any]:
    return {
        "post": {
            "summary": summary,
            "security": [{"gatewayKey": []}, {}],
            "parameters": _GATEWAY_HEADERS,
            "requestBody": {
                "required": True,
                "content": {
                    "application/json": {"schema": {"$ref": f"#/components/schemas/{schema}"}}
                },
            },
            "responses": {
                "200": {
                    "description": "The backend's answer, or an event stream when stream=true",
                    "content": {**_ANY_JSON, "text/event-stream": {"schema": {"type": "string"}}},
                },
                **_errors(400, 401, 403, 404, 408, 413, 429, 502, 503, 504),
            },
        }
    }


def _header(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "in": "header", "required": False, "schema": schema}


_GATEWAY_HEADERS = [
    _header("x-gateway-priority", {"enum": ["critical", "standard", "sheddable"]}),
    _header("x-gateway-deadline-ms", {"type": "integer", "minimum": 1}),
    _header("x-gateway-session", {"type": "string"}),
    _header("x-gateway-cache", {"enum": ["bypass", "refresh"]}),
    _header("x-gateway-rewrite", {"enum": ["off"]}),
]


def _simple(summary: str, *statuses: int, admin: bool = False, method: str = "get") -> Any:
    operation: dict[str, Any] = {
        "summary": summary,
        "responses": {"200": {"description": "OK", "content": _ANY_JSON}, **_errors(*statuses)},
    }
    if admin:
        operation["security"] = [{"adminKey": []}, {}]
    return {method: operation}


def _one_model() -> Any:
    operation = _simple("One public model the caller may use", 401, 404)
    path = {"name": "model_id", "in": "path", "required": True, "schema": {"type": "string"}}
    operation["get"]["parameters"] = [path]
    return operation


def _request_schemas() -> dict[str, Any]:
    """The request models' JSON Schemas, their nested models hoisted into components."""
    schemas: dict[str, Any] = {}
    for model in (
        ChatRequest,
        CompletionRequest,
        EmbeddingsRequest,
        ResponsesRequest,
        PassThroughRequest,
    ):
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        schemas.update(schema.pop("$defs", {}))
        schemas[model.__name__] = schema
    return schemas


def openapi_document() -> dict[str, Any]:
    return {
        "openapi": "3.1.0",
        "info": {"title": "latency-gateway", "version": "1"},
        "paths": {
            "/v1/chat/completions": _generation("ChatRequest", "Chat completion (OpenAI API)"),
            "/v1/completions": _generation("CompletionRequest", "Text completion (OpenAI API)"),
            "/v1/embeddings": _generation("EmbeddingsRequest", "Embeddings (OpenAI API)"),
            "/v1/responses": _generation("ResponsesRequest", "Responses (OpenAI API)"),
            **{
                path: _generation("PassThroughRequest", f"vLLM's {path}, where backends serve it")
                for path in ("/tokenize", "/detokenize", "/v1/rerank", "/v1/score")
            },
            "/v1/models": _simple("Public models the caller may use", 401),
            "/v1/models/{model_id}": _one_model(),
            "/healthz": _simple("The process is up"),
            "/readyz": _simple("Every pool has a healthy backend", 503),
            "/metrics": {
                "get": {
                    "summary": "Prometheus metrics",
                    "responses": {"200": {"description": "text"}},
                }
            },
            "/admin/reload": _simple(
                "Reload the policy file", 400, 401, 403, 409, admin=True, method="post"
            ),
            "/admin/policy": _simple("The active policy", 401, 403, admin=True),
            "/openapi.json": _simple("This document"),
        },
        "components": {
            "schemas": {**_request_schemas(), "Error": _ERROR},
            "securitySchemes": {
                "gatewayKey": {"type": "http", "scheme": "bearer", "description": "Tenant key"},
                "adminKey": {"type": "http", "scheme": "bearer", "description": "admin.mode: key"},
            },
        },
    }
