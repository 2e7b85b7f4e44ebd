"""The TTFT objective of one request: what admission promises to meet, or refuse at once.

Formula: the pool's ``ttft_s`` (or the one set for the request's priority), longer for long
prompts by ``long_s_per_1k_tokens`` per thousand tokens past ``long_from_tokens``:

    objective = base(priority) + long_s_per_1k_tokens * max(0, prompt_tokens - long_from) / 1000

so a 2,000-token prompt keeps the chat objective (2 s by default) and an 8,000-token one gets
8 s: its prefill alone takes longer, and its user expects it to.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gateway.admission.queue import Priority
from gateway.schema import Objective as ObjectiveSettings


@dataclass(frozen=True, slots=True)
class Objective:
    ttft_s: float
    long_from_tokens: float
    long_s_per_1k_tokens: float
    by_priority: Mapping[Priority, float] = field(default_factory=dict)

    @classmethod
    def of(cls, settings: ObjectiveSettings, long_from_tokens: float) -> Objective:
        by_priority = {Priority[name.upper()]: s for name, s in settings.priority.items()}
        return cls(settings.ttft_s, long_from_tokens, settings.long_s_per_1k_tokens, by_priority)

    def seconds(self, prompt_tokens: float, priority: Priority) -> float:
        base = self.by_priority.get(priority, self.ttft_s)
        extra = max(0.0, prompt_tokens - self.long_from_tokens) / 1000.0
        return base + self.long_s_per_1k_tokens * extra
