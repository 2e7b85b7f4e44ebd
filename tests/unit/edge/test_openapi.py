"""The OpenAPI document: every route the app serves, from the route table; examples and links
that work with the running policy; security as the policy sets it; one error shape."""

from __future__ import annotations

from typing import Any

import jsonschema_rs
import orjson
import pytest
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from gateway import errors
from gateway.app import build_app
from gateway.edge.openapi import openapi_document
from gateway.edge.openapi_parts import ERROR, example_body
from gateway.edge.routes import routes
from gateway.openai.endpoints import GATEWAY_PATHS
from gateway.openai.parse import parse_request
from gateway.policy import load_policy_text
from gateway.policy.compile import CompiledPolicy
from gateway.security.api_keys import hash_key
from gateway.security.input_limits import apply_input_limits
from tests.support.policies import single_pool
from tests.support.security import ADMIN_KEY, tenants_yaml

TWO_POOLS = """
backends:
  - {name: s0, url: "http://127.0.0.1:1", model: small-m, pool: small}
  - {name: l0, url: "http://127.0.0.1:2", model: large-m, pool: large,
     extra_routes: [tokenize, detokenize, rerank, score]}
models:
  auto: {route: auto}
  fast: {pool: small}
  smart: {pool: large}
limits: {max_tokens: 8, max_message_chars: 5, max_prompt_chars: 3}
"""


def _policy(text: str = TWO_POOLS) -> CompiledPolicy:
    return load_policy_text(text)


def _document(policy: CompiledPolicy, served: list[BaseRoute] | None = None) -> dict[str, Any]:
    served = routes() if served is None else served
    # Served as JSON: compare what a client reads.
    return dict(orjson.loads(orjson.dumps(openapi_document(served, policy))))


def _validator(document: dict[str, Any], ref: str) -> jsonschema_rs.Validator:
    return jsonschema_rs.validator_for({"$ref": ref, "components": document["components"]})


def test_every_route_of_the_app_is_in_the_document_with_its_methods() -> None:
    app = build_app(_policy())
    document = _document(_policy(), list(app.routes))
    for route in app.routes:
        assert isinstance(route, Route)
        methods = {m.lower() for m in route.methods or ()} - {"head"}
        assert methods, route.path
        assert set(document["paths"][route.path_format]) == methods, route.path
    ids = [op["operationId"] for item in document["paths"].values() for op in item.values()]
    assert len(ids) == len(set(ids))


def test_a_new_route_appears_from_its_docstring() -> None:
    async def ping(request: Request) -> Response:
        """Answers pong.

        More words the summary leaves out."""
        return Response("pong")

    document = _document(_policy(), [*routes(), Route("/ping", ping, methods=["GET", "POST"])])
    item = document["paths"]["/ping"]
    assert set(item) == {"get", "post"}
    assert item["get"]["summary"] == "Answers pong."
    assert item["get"]["operationId"] != item["post"]["operationId"]


def test_examples_are_valid_and_name_a_model_that_serves_the_route() -> None:
    policy = _policy()
    document = _document(policy)
    for path, endpoint in GATEWAY_PATHS.items():
        media = document["paths"][path]["post"]["requestBody"]["content"]["application/json"]
        example = media["example"]
        assert example == example_body(policy, endpoint)
        assert _validator(document, media["schema"]["$ref"]).is_valid(example), path
        parsed = parse_request(endpoint, orjson.dumps(example))
        apply_input_limits(parsed, policy.source.limits)  # within the policy's limits
        route = policy.models[example["model"]]
        pool = route.pool or policy.default_pool
        assert policy.pools[pool].serves(endpoint), (path, example["model"])
    # vLLM's own routes: only the large pool declares them.
    assert (
        document["paths"]["/tokenize"]["post"]["requestBody"]["content"]["application/json"][
            "example"
        ]["model"]
        == "smart"
    )


def test_model_examples_are_the_policys_models() -> None:
    document = _document(_policy())
    for name in ("ChatRequest", "EmbeddingsRequest", "PassThroughRequest"):
        model = document["components"]["schemas"][name]["properties"]["model"]
        assert model["examples"] == ["auto", "fast", "smart"]


def test_the_model_list_links_to_every_operation_that_takes_a_model() -> None:
    document = _document(_policy())
    answer = document["paths"]["/v1/models"]["get"]["responses"]["200"]
    links = answer["links"]
    operations = {
        op["operationId"]: (path, op)
        for path, item in document["paths"].items()
        for op in item.values()
    }
    targets = {link["operationId"] for link in links.values()}
    assert targets == {
        op_id
        for op_id, (path, op) in operations.items()
        if path in GATEWAY_PATHS or path == "/v1/models/{model_id}"
    }
    for link in links.values():
        path, _ = operations[link["operationId"]]
        if path == "/v1/models/{model_id}":
            assert link["parameters"] == {"path.model_id": "$response.body#/data/0/id"}
        else:
            assert link["requestBody"] == {"model": "$response.body#/data/0/id"}


def test_limits_and_body_size_follow_the_policy() -> None:
    document = _document(_policy(TWO_POOLS + "server: {max_body_bytes: 2048}\n"))
    schemas = document["components"]["schemas"]
    assert {"type": "integer", "minimum": 1, "maximum": 8} in schemas["ChatRequest"]["properties"][
        "max_tokens"
    ]["anyOf"]
    body = document["paths"]["/v1/chat/completions"]["post"]["requestBody"]
    assert body["x-max-body-bytes"] == 2048
    assert "413" in document["paths"]["/v1/chat/completions"]["post"]["responses"]


def test_security_is_the_policys() -> None:
    open_doc = _document(_policy())
    for path in ("/v1/chat/completions", "/v1/models", "/admin/reload", "/metrics"):
        (operation,) = open_doc["paths"][path].values()
        assert "security" not in operation, path
    assert "403" in open_doc["paths"]["/admin/reload"]["post"]["responses"]  # loopback only

    admin = f'admin: {{mode: key, keys: ["{hash_key(ADMIN_KEY)}"], protect: [metrics]}}\n'
    guarded = _document(_policy(single_pool("http://127.0.0.1:1") + tenants_yaml() + admin))
    paths = guarded["paths"]
    assert paths["/v1/chat/completions"]["post"]["security"] == [{"gatewayKey": []}]
    assert paths["/v1/models"]["get"]["security"] == [{"gatewayKey": []}]
    assert paths["/admin/reload"]["post"]["security"] == [{"adminKey": []}]
    assert paths["/metrics"]["get"]["security"] == [{"adminKey": []}]
    assert "security" not in paths["/dashboard"]["get"]  # not in admin.protect
    assert "security" not in paths["/healthz"]["get"]


def _instances(cls: type[errors.GatewayError]) -> errors.GatewayError:
    if cls is errors.PolicyRejected:
        return errors.PolicyRejected("bad", digest="abc", from_file=True)
    if cls is errors.UpstreamClientError:
        return errors.UpstreamClientError(422, "bad", param="x", code=None)
    return cls("message", param="p", code="c")


def _subclasses(cls: type[errors.GatewayError]) -> list[type[errors.GatewayError]]:
    return [cls, *(s for sub in cls.__subclasses__() for s in _subclasses(sub))]


@pytest.mark.parametrize("cls", _subclasses(errors.GatewayError), ids=lambda c: c.__name__)
def test_every_error_matches_the_documented_error_schema(cls: type[errors.GatewayError]) -> None:
    error = _instances(cls)
    assert jsonschema_rs.validator_for(ERROR).is_valid(orjson.loads(error.body_bytes()))
    error.param = error.code = None  # the other documented form of both
    assert jsonschema_rs.validator_for(ERROR).is_valid(orjson.loads(error.body_bytes()))
