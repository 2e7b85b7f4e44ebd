"""Policy schema: prompt canonicalisation for backend prefix-cache hits."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gateway.policy.schema._base import Name, PositiveSeconds, _Strict

VolatileKind = Literal["timestamp", "epoch", "uuid", "request_id"]
_ALL_VOLATILE: tuple[VolatileKind, ...] = ("timestamp", "epoch", "uuid", "request_id")


class PrefixTracking(_Strict):
    """Per-session memory of the last prompt, to explain prefix-cache misses."""

    enabled: bool = True
    max_sessions: int = Field(default=10_000, ge=1, le=10_000_000)
    ttl_s: PositiveSeconds = 1800.0
    max_chars: int = Field(default=32_768, ge=1, le=10_000_000)


class RewritePattern(_Strict):
    """An operator's volatile fragment: moved out of the system prompt like a timestamp."""

    name: Name
    regex: str = Field(min_length=1)
    cause: Literal["timestamp", "id", "other"] = "other"


class Rewrite(_Strict):
    """Prompt canonicalisation so backends' prefix caches hit (x-gateway-rewrite: off skips)."""

    enabled: bool = True
    kinds: list[VolatileKind] = Field(default_factory=lambda: list(_ALL_VOLATILE))
    extra_patterns: list[RewritePattern] = Field(default_factory=list)
    note_placement: Literal["system_suffix", "system_message", "last_user_suffix"] = "system_suffix"
    sort_tools: bool = True
    prefix_tracking: PrefixTracking = PrefixTracking()
