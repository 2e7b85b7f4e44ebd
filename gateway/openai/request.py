"""The request as every layer below the HTTP edge knows it: endpoint, public model, stream
flag and the JSON body (parsed and checked by ``parse.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Endpoint = Literal[
    "chat", "completions", "embeddings", "responses", "tokenize", "detokenize", "rerank", "score"
]

# Endpoints whose prompt the gateway may rewrite, cache and compress: their bodies and
# answers are the ones those stages are written (and property-tested) for.
PROMPT_ENDPOINTS: frozenset[Endpoint] = frozenset({"chat", "completions"})

# Endpoints that generate output (the others cost their input only).
GENERATING: frozenset[Endpoint] = frozenset({"chat", "completions", "responses"})

# vLLM's own routes, relayed only to backends that declare them (``extra_routes``).
PASS_THROUGH: frozenset[Endpoint] = frozenset({"tokenize", "detokenize", "rerank", "score"})


@dataclass(frozen=True, slots=True)
class ParsedRequest:
    """The facts the gateway needs, plus the body exactly as the client sent it."""

    endpoint: Endpoint
    model: str
    stream: bool
    body: dict[str, Any]
