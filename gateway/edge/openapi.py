"""The gateway's OpenAPI 3.1 document (served at ``GET /openapi.json``), for the routes it
serves and the policy it runs.

Every route of the app is in it, with the methods it answers (HEAD, which Starlette adds to
GET, aside): the OpenAI endpoints with their request bodies, the gateway's own routes from
the table below, and any other route from its handler's docstring, so a new route appears
without an edit here. Request bodies are the JSON Schemas of the pydantic models that
validate them (``openai/parse.py``), with the running policy's input limits on them
(``security/limits_schema.py``) and its model names as examples; unknown fields are allowed,
as on the wire. ``GET /v1/models`` links to every operation that takes a model (OpenAPI
links: its first model's id as the path's ``model_id`` or the body's ``model``). Security is
the policy's: a bearer key where it has tenants (or ``admin.mode: key``), none otherwise.
Every error answer uses the one OpenAI error shape of ``errors.py``. The document depends
on the policy, so it is built again after a reload (``routes.openapi`` keeps one per policy).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from starlette.routing import BaseRoute, Route

from gateway.edge.openapi_parts import (
    GATEWAY_HEADERS,
    GATEWAY_SCHEMAS,
    REQUEST_SCHEMAS,
    example_body,
    request_schemas,
)
from gateway.openai.endpoints import GATEWAY_PATHS
from gateway.openai.request import Endpoint
from gateway.policy.compile import CompiledPolicy

Schema = dict[str, Any]
_JSON = "application/json"
_GENERATION_ERRORS = (400, 401, 403, 404, 408, 413, 429, 502, 503, 504)


def _ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def _errors(*statuses: int) -> Schema:
    content = {_JSON: {"schema": _ref("Error")}}
    return {str(s): {"description": "OpenAI-shaped error", "content": content} for s in statuses}


def _ok(schema: Schema, media: str = _JSON, description: str = "OK") -> Schema:
    return {"description": description, "content": {media: {"schema": schema}}}


# The gateway's own routes: (summary, 200 answer, error statuses, what protects it). A route
# not listed here is documented from its handler's docstring.
_OWN: dict[str, tuple[str, Schema, tuple[int, ...], str | None]] = {
    "/v1/models": ("Public models the caller may use", _ok(_ref("ModelList")), (401,), "tenant"),
    "/v1/models/{model_id}": (
        "One public model the caller may use",
        _ok(_ref("Model")),
        (401, 404),
        "tenant",
    ),
    "/healthz": ("The process is up", _ok({"type": "object"}), (), None),
    "/readyz": ("Every pool has a healthy backend", _ok(_ref("Readiness")), (), None),
    "/metrics": ("Prometheus metrics", _ok({"type": "string"}, "text/plain"), (), "metrics"),
    "/openapi.json": ("This document", _ok({"type": "object"}), (), "openapi"),
    "/admin/reload": (
        "Reload the policy file",
        _ok({"type": "object", "required": ["status", "digest"]}),
        (400, 409),
        "admin",
    ),
    "/admin/policy": ("The active policy", _ok({"type": "object"}), (), "admin"),
    "/dashboard": (
        "The live dashboard page",
        _ok({"type": "string"}, "text/html"),
        (),
        "dashboard",
    ),
    "/dashboard/data": ("What the dashboard shows", _ok({"type": "object"}), (400,), "dashboard"),
}
# Query parameters of the gateway's own routes.
_QUERY: dict[str, list[Schema]] = {
    "/dashboard/data": [
        {
            "name": "since",
            "in": "query",
            "required": False,
            "schema": {"type": "number"},
            "description": "Only the history points after this one's 'at'",
        }
    ]
}


def openapi_document(served: Sequence[BaseRoute], policy: CompiledPolicy) -> Schema:
    paths: dict[str, Schema] = {}
    for route in served:
        if not isinstance(route, Route):
            continue
        item = paths.setdefault(route.path_format, {})
        for method in sorted(route.methods or ()):
            if method != "HEAD":
                item[method.lower()] = _operation(route, method, policy)
    _link_models(paths)
    return {
        "openapi": "3.1.0",
        "info": {"title": "latency-gateway", "version": "1", "description": _DESCRIPTION},
        "paths": paths,
        "components": {
            "schemas": {**request_schemas(policy), **GATEWAY_SCHEMAS},
            "securitySchemes": {
                "gatewayKey": {"type": "http", "scheme": "bearer", "description": "Tenant key"},
                "adminKey": {"type": "http", "scheme": "bearer", "description": "admin.mode: key"},
            },
        },
    }


_DESCRIPTION = (
    "An OpenAI-compatible gateway in front of inference servers. Request fields the gateway "
    "does not check pass through to the backend unchanged; a backend's own refusal (4xx) "
    "comes back with its status and message. Every response carries x-gateway-request-id."
)


def _operation(route: Route, method: str, policy: CompiledPolicy) -> Schema:
    path = route.path_format
    endpoint = GATEWAY_PATHS.get(path)
    if endpoint is not None and method == "POST":
        operation = _generation(endpoint, policy)
    elif path in _OWN:
        summary, shared, statuses, guard = _OWN[path]
        answer = copy.deepcopy(shared)
        operation = {"summary": summary, "responses": {"200": answer, **_errors(*statuses)}}
        if path == "/readyz":
            operation["responses"]["503"] = {**answer, "description": "Not ready"}
        _guard(operation, guard, policy)
    else:
        doc = (route.endpoint.__doc__ or route.name).strip().splitlines()[0]
        operation = {
            "summary": doc,
            "responses": {"200": {"description": "OK"}, "default": _errors(400)["400"]},
        }
    parameters = [*_path_parameters(route), *_QUERY.get(path, [])]
    if endpoint is not None:
        parameters += GATEWAY_HEADERS
    if parameters:
        operation["parameters"] = parameters
    return {"operationId": _operation_id(route, method), **operation}


def _operation_id(route: Route, method: str) -> str:
    methods = [m for m in route.methods or () if m != "HEAD"]
    return route.name if len(methods) == 1 else f"{route.name}_{method.lower()}"


def _path_parameters(route: Route) -> list[Schema]:
    return [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in route.param_convertors
    ]


def _guard(operation: Schema, guard: str | None, policy: CompiledPolicy) -> None:
    """Security and refusals of a gateway route: a tenant's key where the policy has tenants;
    the admin check on admin routes and on the read-only ones ``admin.protect`` lists."""
    admin = policy.source.admin
    responses = operation["responses"]
    if guard == "tenant" and policy.keys:
        operation["security"] = [{"gatewayKey": []}]
    elif guard == "admin" or guard in admin.protect:
        if admin.mode == "key":
            operation["security"] = [{"adminKey": []}]
            responses.update(_errors(401))
        else:
            responses.update(_errors(403))  # from anywhere but the loopback interface


def _generation(endpoint: Endpoint, policy: CompiledPolicy) -> Schema:
    server = policy.source.server
    media: Schema = {"schema": _ref(REQUEST_SCHEMAS[endpoint])}
    example = example_body(policy, endpoint)
    if example is not None:
        media["example"] = example
    operation: Schema = {
        "summary": f"{endpoint} (OpenAI API)" if endpoint in _OPENAI else f"vLLM's {endpoint}",
        "requestBody": {
            "required": True,
            "description": f"A JSON object of at most {server.max_body_bytes} bytes (else 413).",
            "content": {_JSON: media},
            "x-max-body-bytes": server.max_body_bytes,
        },
        "responses": {
            "200": {
                "description": "The backend's answer, or an event stream when stream is true",
                "content": {_JSON: {"schema": {"type": "object"}}, "text/event-stream": {}},
            },
            **_errors(*_GENERATION_ERRORS),
            "4XX": _errors(400)["400"] | {"description": "The backend's own refusal"},
        },
    }
    if policy.keys:
        operation["security"] = [{"gatewayKey": []}]
    return operation


_OPENAI: frozenset[Endpoint] = frozenset({"chat", "completions", "embeddings", "responses"})


def _link_models(paths: dict[str, Schema]) -> None:
    """Links from ``GET /v1/models`` to every operation that takes a model."""
    listing = paths.get("/v1/models", {}).get("get")
    if listing is None:
        return
    first = "$response.body#/data/0/id"
    links: Schema = {}
    for path, item in paths.items():
        for operation in item.values():
            if path == "/v1/models/{model_id}":
                links["retrieve"] = {
                    "operationId": operation["operationId"],
                    "parameters": {"path.model_id": first},
                }
            elif path in GATEWAY_PATHS and "requestBody" in operation:
                links[GATEWAY_PATHS[path]] = {
                    "operationId": operation["operationId"],
                    "requestBody": {"model": first},
                }
    listing["responses"]["200"]["links"] = links
