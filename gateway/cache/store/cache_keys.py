"""Cache keys of a request: the exact key, the semantic scope and the query text.

Algorithm: the request body (already canonicalised by the rewrite stage) is split into
- the *query*: the text of the last user message (chat) or the prompt string (completions);
- the *context*: everything else that shapes the answer (earlier messages, system prompt,
  tools, response format, stop sequences, sampling parameters, ...), minus transport fields
  (``stream``, ``stream_options``, ``user``) that do not change the answer.
The exact key hashes (endpoint, public model, tenant, context, query, max_tokens bucket).
The semantic scope hashes the same without the query: only requests that agree on
everything but the wording of the question may share an answer. ``max_tokens`` goes in as
a power-of-two bucket (a stored answer is also checked to fit the new limit), and the tenant
is a hash of the client's ``Authorization`` header, so tenants never see each other's answers.
BLAKE2b-128 over canonical JSON (sorted keys) keeps keys short and stable.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from gateway.openai.messages import requested_max_tokens

# Fields that change how the answer is delivered, not what it says.
_TRANSPORT = frozenset({"stream", "stream_options", "user", "model", "max_tokens"})
_TRANSPORT_CHAT = _TRANSPORT | {"messages", "max_completion_tokens"}
_TRANSPORT_COMPLETIONS = _TRANSPORT | {"prompt"}


@dataclass(frozen=True, slots=True)
class RequestKeys:
    exact: str
    scope: str
    query: str | None  # None: nothing to compare semantically (exact cache only)
    max_tokens: int | None


def request_keys(
    endpoint: str, public_model: str, body: Mapping[str, Any], authorization: str | None
) -> RequestKeys:
    tenant = _digest(authorization or "")
    max_tokens = requested_max_tokens(body)
    context, query = _split(endpoint, body)
    scope_parts = [endpoint, public_model, tenant, context, _bucket(max_tokens)]
    scope = _digest(_dumps(scope_parts))
    exact = _digest(_dumps([*scope_parts, query]))
    return RequestKeys(exact=exact, scope=scope, query=query, max_tokens=max_tokens)


def query_text(endpoint: str, body: Mapping[str, Any]) -> str | None:
    """The question of a request (last user message, or the prompt string), if it has one."""
    return _split(endpoint, body)[1]


def _split(endpoint: str, body: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    if endpoint == "chat":
        messages = list(body.get("messages") or [])
        last = messages[-1] if messages else None
        query = _user_text(last)
        history = messages[:-1] if query is not None else messages
        context = {k: v for k, v in body.items() if k not in _TRANSPORT_CHAT}
        context["__history"] = history
        return context, query
    prompt = body.get("prompt")
    context = {k: v for k, v in body.items() if k not in _TRANSPORT_COMPLETIONS}
    if not isinstance(prompt, str):
        context["__prompt"] = prompt  # token ids or many prompts: exact match only
        return context, None
    return context, prompt


def _user_text(message: object) -> str | None:
    if not isinstance(message, dict) or message.get("role") != "user":
        return None
    content = message.get("content")
    if isinstance(content, str):
        return content
    return None  # multi-part (images...) content: exact match only


def _bucket(max_tokens: int | None) -> int:
    return 0 if max_tokens is None else max(1, max_tokens - 1).bit_length()


def _dumps(value: object) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def _digest(data: str | bytes) -> str:
    raw = data.encode() if isinstance(data, str) else data
    return hashlib.blake2b(raw, digest_size=16).hexdigest()
