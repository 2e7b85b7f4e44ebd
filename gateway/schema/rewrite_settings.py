"""Policy schema: prompt canonicalisation for backend prefix-cache hits."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from gateway.schema.strict import Name, PositiveSeconds, _Strict

VolatileKind = Literal["timestamp", "epoch", "uuid", "request_id"]
_ALL_VOLATILE: tuple[VolatileKind, ...] = ("timestamp", "epoch", "uuid", "request_id")
# Rewrites of what the client wrote outside the system prompt; each only when named.
TransformName = Literal[
    "user_whitespace",
    "assistant_whitespace",
    "tool_whitespace",
    "completions_whitespace",
    "tool_order",
    "tool_schema_key_order",
]


class PrefixTracking(_Strict):
    """Per-session memory of the last prompt, to explain prefix-cache misses."""

    enabled: bool = Field(
        default=True, description="Report prefix breaks in x-gateway-prefix-break"
    )
    max_sessions: int = Field(
        description="Sessions remembered", default=10_000, ge=1, le=10_000_000
    )
    ttl_s: PositiveSeconds = Field(
        default=1800.0, description="Seconds a session's previous prompt is remembered"
    )
    max_chars: int = Field(
        description="Characters of a prompt compared", default=32_768, ge=1, le=10_000_000
    )


class RewritePattern(_Strict):
    """An operator's volatile fragment: moved out of the system prompt like a timestamp."""

    name: Name = Field(description="Name of the placeholder")
    regex: str = Field(description="Regular expression of the fragment", min_length=1)
    cause: Literal["timestamp", "id", "other"] = Field(
        default="other",
        description="Cause reported in x-gateway-prefix-break when this fragment breaks a prefix",
    )


class Rewrite(_Strict):
    """Prompt canonicalisation so backends' prefix caches hit (x-gateway-rewrite: off skips).

    Only the system prompt is canonicalised unless ``transforms`` names more."""

    enabled: bool = Field(
        default=True,
        description="Canonicalise system prompts (a client skips it with x-gateway-rewrite: off)",
    )
    kinds: list[VolatileKind] = Field(
        description="Volatile fragments moved out of system prompts into a note",
        default_factory=lambda: list(_ALL_VOLATILE),
    )
    extra_patterns: list[RewritePattern] = Field(
        description="Your own volatile fragments, as regular expressions", default_factory=list
    )
    note_placement: Literal["system_suffix", "system_message", "last_user_suffix"] = Field(
        default="system_suffix",
        description="Where the note pairing placeholders with their text goes (last_user_suffix "
        "touches the last user turn)",
    )
    transforms: list[TransformName] = Field(
        default_factory=list,
        description="Opt-in rewrites of user/assistant/tool text, completions prompts, tools",
    )
    prefix_tracking: PrefixTracking = Field(
        default=PrefixTracking(),
        description="Compare a session's prompt with its previous one and report where the "
        "prefix broke",
    )

    @model_validator(mode="before")
    @classmethod
    def _sort_tools_moved(cls, data: Any) -> Any:
        # A policy written for the old default names the setting that replaced it.
        if isinstance(data, dict) and "sort_tools" in data:
            raise ValueError(
                "sort_tools was replaced by transforms: list tool_order and/or "
                "tool_schema_key_order under rewrite.transforms"
            )
        return data
