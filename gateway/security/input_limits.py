"""Input limits from the policy (``limits:``), checked right after parsing.

Each limit has its own 400 with ``param`` naming the field and ``code`` naming the limit:
number of messages, characters per message (text parts of structured content counted),
characters of a completions prompt (of an embeddings or Responses API ``input``, token ids
counted as four characters), ``n`` (chat and completions), an embeddings request's
``dimensions``, and ``max_tokens``/
``max_completion_tokens`` (the Responses API's ``max_output_tokens``) above the cap, which is
refused or clamped to the cap as the policy says. Numbers are read as JSON Schema reads them
(``openai/numbers.py``: ``8.0`` is 8). The body size limit is enforced while reading
(``openai/body.py``). The OpenAPI document states the same limits (``limits_schema.py``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gateway.errors import InvalidRequest
from gateway.openai.messages import message_texts, prompt_chars
from gateway.openai.numbers import whole_number
from gateway.openai.request import ParsedRequest
from gateway.schema import InputLimits

_TOKEN_FIELDS = ("max_tokens", "max_completion_tokens", "max_output_tokens")
# The endpoints whose requests have ``n`` (choices per prompt).
_N_ENDPOINTS = frozenset({"chat", "completions"})


def apply_input_limits(request: ParsedRequest, limits: InputLimits) -> ParsedRequest:
    """Refuse a request over a limit; return it (with a clamped body where allowed)."""
    body = request.body
    if request.endpoint in _N_ENDPOINTS:
        _check_n(body, limits)
    if request.endpoint == "embeddings":
        _check_dimensions(body, limits)
    if request.endpoint == "chat":
        _check_messages(body["messages"], limits)
    elif "input" in body:  # embeddings, Responses API: the whole input against the prompt cap
        _check_chars(prompt_chars(body), limits, "input")
    else:
        _check_prompt(body.get("prompt"), limits)
    clamped = _token_cap(body, limits)
    return request if clamped is body else replace(request, body=clamped)


def _check_n(body: dict[str, Any], limits: InputLimits) -> None:
    n = whole_number(body.get("n"))
    if n is not None and n > limits.max_n:
        raise InvalidRequest(
            f"n={n} is above the gateway's limit of {limits.max_n}.", param="n", code="n_too_large"
        )


def _check_dimensions(body: dict[str, Any], limits: InputLimits) -> None:
    asked = whole_number(body.get("dimensions"))
    cap = limits.max_dimensions
    if cap is not None and asked is not None and asked > cap:
        raise InvalidRequest(
            f"dimensions={asked} is above the gateway's limit of {cap}.",
            param="dimensions",
            code="dimensions_too_large",
        )


def _check_messages(messages: list[Any], limits: InputLimits) -> None:
    if limits.max_messages is not None and len(messages) > limits.max_messages:
        raise InvalidRequest(
            f"The request has {len(messages)} messages; the limit is {limits.max_messages}.",
            param="messages",
            code="too_many_messages",
        )
    cap = limits.max_message_chars
    if cap is None:
        return
    for i, message in enumerate(messages):
        chars = sum(len(text) for text in message_texts(message))
        if chars > cap:
            raise InvalidRequest(
                f"Message {i} has {chars} characters; the limit is {cap} per message.",
                param=f"messages[{i}].content",
                code="message_too_long",
            )


def _check_prompt(prompt: object, limits: InputLimits) -> None:
    parts = [prompt] if isinstance(prompt, str) else prompt if isinstance(prompt, list) else []
    _check_chars(sum(len(p) for p in parts if isinstance(p, str)), limits, "prompt")


def _check_chars(chars: int, limits: InputLimits, param: str) -> None:
    cap = limits.max_prompt_chars
    if cap is not None and chars > cap:
        raise InvalidRequest(
            f"The {param} has {chars} characters; the limit is {cap}.",
            param=param,
            code="prompt_too_long",
        )


def _token_cap(body: dict[str, Any], limits: InputLimits) -> dict[str, Any]:
    cap = limits.max_tokens
    if cap is None:
        return body
    over = [f for f in _TOKEN_FIELDS if (whole_number(body.get(f)) or 0) > cap]
    if not over:
        return body
    if limits.max_tokens_action == "refuse":
        field = over[0]
        raise InvalidRequest(
            f"{field}={body[field]} is above the gateway's cap of {cap}.",
            param=field,
            code="max_tokens_too_large",
        )
    return {**body, **dict.fromkeys(over, cap)}
