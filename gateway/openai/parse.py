"""Minimal OpenAI request models: check the fields the gateway relies on, pass the rest through.

Only the fields we read or that a backend would reject in a confusing way are checked; any
other field stays in the body untouched, so new OpenAI parameters keep working.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gateway.errors import InvalidRequest
from gateway.openai.numbers import INTEGRAL, Whole
from gateway.openai.request import Endpoint, ParsedRequest
from gateway.openai.simple_chat import simple_chat

Role = Literal["system", "developer", "user", "assistant", "tool", "function"]


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)


class Message(_Open):
    role: Role
    content: str | list[dict[str, Any]] | None = None


class StreamOptions(_Open):
    include_usage: bool | None = None


class PassThroughRequest(_Open):
    """vLLM's own routes (tokenize, detokenize, rerank, score): the model picks the pool; the
    backend checks the rest."""

    model: Annotated[str, Field(min_length=1)]
    stream: None = None  # none of them streams


class _Sampled(_Open):
    model: Annotated[str, Field(min_length=1)]
    stream: bool | None = None
    temperature: Annotated[float, Field(ge=0, le=2)] | None = None
    top_p: Annotated[float, Field(ge=0, le=1)] | None = None


class _Common(_Sampled):
    stream_options: StreamOptions | None = None
    max_tokens: Annotated[int, Field(ge=1), INTEGRAL] | None = None
    n: Annotated[int, Field(ge=1, le=128), INTEGRAL] | None = None
    seed: Whole | None = None


class ChatRequest(_Common):
    messages: Annotated[list[Message], Field(min_length=1)]
    max_completion_tokens: Annotated[int, Field(ge=1), INTEGRAL] | None = None


class CompletionRequest(_Common):
    prompt: str | list[str] | list[Whole] | list[list[Whole]]


class EmbeddingsRequest(PassThroughRequest):
    input: (
        Annotated[str, Field(min_length=1)]
        | Annotated[list[str], Field(min_length=1)]
        | Annotated[list[Whole], Field(min_length=1)]
        | Annotated[list[Annotated[list[Whole], Field(min_length=1)]], Field(min_length=1)]
    )
    encoding_format: Literal["float", "base64"] | None = None
    dimensions: Annotated[int, Field(ge=1), INTEGRAL] | None = None


class ResponsesRequest(_Sampled):
    """The Responses API: ``input`` is text or a list of items (messages, tool outputs)."""

    input: (
        Annotated[str, Field(min_length=1)] | Annotated[list[dict[str, Any]], Field(min_length=1)]
    )
    instructions: str | None = None
    max_output_tokens: Annotated[int, Field(ge=1), INTEGRAL] | None = None


_MODELS: dict[Endpoint, type[PassThroughRequest | _Sampled]] = {
    "chat": ChatRequest,
    "completions": CompletionRequest,
    "embeddings": EmbeddingsRequest,
    "responses": ResponsesRequest,
    "tokenize": PassThroughRequest,
    "detokenize": PassThroughRequest,
    "rerank": PassThroughRequest,
    "score": PassThroughRequest,
}


def request_model(endpoint: Endpoint) -> type[BaseModel]:
    """The model that checks ``endpoint``'s requests; the OpenAPI document shows its schema."""
    return _MODELS[endpoint]


def parse_request(endpoint: Endpoint, raw: bytes) -> ParsedRequest:
    body = _decode_json(raw)
    if endpoint == "chat" and simple_chat(body):  # the model would accept it as it is
        return ParsedRequest(endpoint, body["model"], body.get("stream") is True, body)
    try:
        parsed = _MODELS[endpoint].model_validate(body)
    except ValidationError as exc:
        raise _invalid(exc) from None
    return ParsedRequest(endpoint, parsed.model, bool(parsed.stream), body)


def _decode_json(raw: bytes) -> dict[str, Any]:
    if not raw.strip():
        raise InvalidRequest("The request body is empty; send a JSON object.")
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InvalidRequest(f"The request body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise InvalidRequest("The request body must be a JSON object.")
    return body


def _invalid(exc: ValidationError) -> InvalidRequest:
    errors = exc.errors(include_url=False)
    first = errors[0]
    param = _dotted(first["loc"])
    if first["type"] == "missing":
        message = f"Missing required parameter: '{param}'."
    else:
        message = f"Invalid value for '{param}': {first['msg']}."
    if len(errors) > 1:
        message += f" ({len(errors) - 1} more problem(s) in the request.)"
    return InvalidRequest(message, param=param, code="invalid_value")


def _dotted(loc: tuple[int | str, ...]) -> str:
    out = ""
    for item in loc:
        if isinstance(item, int):
            out += f"[{item}]"
        elif not out:
            out = item
        elif item in ("str", "int", "none") or "[" in item or item.startswith("constrained-"):
            # Union branches pydantic names in the location are noise to a client.
            continue
        else:
            out += f".{item}"
    return out
