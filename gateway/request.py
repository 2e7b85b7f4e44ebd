"""The request as every layer below the HTTP edge knows it: endpoint, public model, stream
flag and the JSON body (parsed and checked by ``edge/openai_api.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Endpoint = Literal["chat", "completions"]


@dataclass(frozen=True, slots=True)
class ParsedRequest:
    """The facts the gateway needs, plus the body exactly as the client sent it."""

    endpoint: Endpoint
    model: str
    stream: bool
    body: dict[str, Any]
