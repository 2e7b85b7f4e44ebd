"""The planned request: everything the client needs to send one streaming chat completion."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class PlannedRequest:
    index: int
    at_s: float
    label: str
    model: str
    messages: list[dict[str, Any]]
    max_tokens: int
    temperature: float
    headers: dict[str, str] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def body(self, model: str | None = None) -> dict[str, Any]:
        """The JSON body; ``model`` replaces the workload's name (direct mode)."""
        return {
            **self.extra,
            "model": model or self.model,
            "messages": self.messages,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "stream": True,
            "stream_options": {"include_usage": True},
        }

    def as_dict(self) -> dict[str, Any]:
        return {"t": self.at_s, "label": self.label, "headers": self.headers, **self.body()}
