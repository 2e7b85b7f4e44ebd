"""Prefill pacing: bound the prompt tokens a pool has admitted but not yet prefilled.

Algorithm: the pool counts the prompt tokens of requests that hold a slot but have not yet
produced their first token (the engine is still prefilling them, or they wait inside it). A
waiting request is admitted only while that count is under ``max_prefill_tokens``; one
request may overshoot by its own size, so a prompt longer than the budget still runs alone.
A request's tokens leave the count at its first token, or when it ends. Why: a burst that
fills every slot at once queues all its prompts inside the engines, and the last of them
waits for every prefill before it; pacing keeps that queue in the gateway, where it is
ordered by priority and deadline and can be shed with an honest Retry-After.

Parameters: ``limit`` (tokens; None turns pacing off).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class PrefillBudget:
    limit: float | None
    in_flight: float = 0.0

    def has_room(self) -> bool:
        return self.limit is None or self.in_flight < self.limit

    def start(self, tokens: float) -> None:
        self.in_flight += tokens

    def done(self, tokens: float) -> None:
        self.in_flight = max(0.0, self.in_flight - tokens)
