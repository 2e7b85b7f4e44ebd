"""Per-request measurements and their (de)serialisation as JSON lines.

Times are seconds relative to the run start, measured with one monotonic clock.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

SHED_STATUSES = frozenset({429, 503})


@dataclass(slots=True)
class RequestRecord:
    index: int
    label: str
    target: str
    scheduled_s: float
    sent_s: float = 0.0
    ttft_s: float | None = None
    itl_s: list[float] = field(default_factory=list)
    e2e_s: float | None = None
    status: int | None = None
    error: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    content_chunks: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    text: str | None = None  # the answer's text, when the client keeps it (``keep_text``)

    @property
    def ok(self) -> bool:
        return self.status == 200 and self.error is None

    @property
    def shed(self) -> bool:
        return self.status in SHED_STATUSES

    @property
    def lateness_s(self) -> float:
        return self.sent_s - self.scheduled_s

    @property
    def end_s(self) -> float:
        return self.sent_s + (self.e2e_s or 0.0)

    def output_tokens(self) -> int:
        """Usage's completion tokens, else the number of content chunks seen."""
        if self.completion_tokens is not None:
            return self.completion_tokens
        return self.content_chunks

    def tpot_s(self) -> float | None:
        """Time per output token after the first: ``(e2e - ttft) / (tokens - 1)``."""
        tokens = self.output_tokens()
        if self.ttft_s is None or self.e2e_s is None or tokens < 2:
            return None
        return (self.e2e_s - self.ttft_s) / (tokens - 1)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RequestRecord:
        return cls(**data)
