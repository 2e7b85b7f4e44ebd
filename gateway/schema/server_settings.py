"""Policy schema: the HTTP server, tracing, input limits and the admin endpoints."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from gateway.schema.auth_settings import KeyHash
from gateway.schema.strict import PositiveSeconds, _Strict


class Server(_Strict):
    """Limits of the gateway's own HTTP server."""

    max_body_bytes: int = Field(
        description="Larger request bodies get 413", default=4 * 1024 * 1024, ge=1024, le=1024**3
    )
    max_keepalive_connections: int = Field(
        default=200, ge=0, le=1_000_000, description="Idle connections kept per backend"
    )
    reload_poll_s: PositiveSeconds = Field(
        default=1.0, description="How often the policy file is checked for changes"
    )
    drain_timeout_s: int = Field(
        default=30, ge=0, le=3600, description="On SIGTERM, seconds in-flight requests may finish"
    )
    access_log: bool = Field(
        default=True, description="One JSON line per request on the gateway.access logger"
    )
    header_timeout_s: PositiveSeconds = Field(
        default=10.0, description="A connection must send a request's headers within this"
    )
    keepalive_timeout_s: int = Field(
        default=75,
        ge=1,
        le=3600,
        description="An idle client connection stays open this long: longer than clients keep "
        "theirs (httpx and the OpenAI SDK: 5 s), so none reuses one as it is closed",
    )
    body_timeout_s: PositiveSeconds = Field(
        default=30.0, description="A request's body must arrive within this (else 408)"
    )
    max_connections: int | None = Field(
        default=1000, ge=1, le=1_000_000, description="Concurrent connections (more get 503)"
    )


class Tracing(_Strict):
    """OpenTelemetry traces: a span per request, its stages as child spans (off by default)."""

    enabled: bool = Field(
        default=False, description="Send a span per request, its stages as child spans"
    )
    otlp_endpoint: str = Field(
        default="http://127.0.0.1:4318/v1/traces", description="OTLP/HTTP traces endpoint"
    )
    service_name: str = Field(
        description="service.name of the spans",
        default="latency-gateway",
        min_length=1,
        max_length=128,
    )
    sample_ratio: float = Field(default=1.0, ge=0, le=1, description="Share of requests traced")
    export_timeout_s: PositiveSeconds = Field(default=5.0, description="Seconds an export may take")

    @field_validator("otlp_endpoint")
    @classmethod
    def _http(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value


class InputLimits(_Strict):
    """Refuse (or clamp) requests beyond these sizes before any other work."""

    max_messages: int | None = Field(description="Messages per request", default=1024, ge=1)
    max_message_chars: int | None = Field(default=1_000_000, ge=1, description="Per message")
    max_prompt_chars: int | None = Field(default=None, ge=1, description="/v1/completions")
    max_tokens: int | None = Field(default=None, ge=1, description="Cap on max_tokens")
    max_tokens_action: Literal["clamp", "refuse"] = Field(
        default="refuse", description="Beyond max_tokens: refuse (400) or clamp to the cap"
    )
    max_n: int = Field(
        description="Largest n (choices) of chat and completions", default=8, ge=1, le=128
    )
    max_dimensions: int | None = Field(
        default=None, ge=1, description="Embeddings: the largest 'dimensions' asked for"
    )


class Admin(_Strict):
    """Protection of /admin/*: loopback clients only, or an admin key from anywhere."""

    mode: Literal["localhost", "key"] = Field(
        default="localhost",
        description="localhost: loopback clients only; key: an admin key from anywhere",
    )
    keys: list[KeyHash] = Field(default_factory=list, description="Admin key hashes (mode: key)")
    protect: list[Literal["metrics", "dashboard", "openapi"]] = Field(
        default_factory=list,
        description="Read-only endpoints that also need admin access (open by default)",
    )

    @model_validator(mode="after")
    def _keys_for_key_mode(self) -> Admin:
        if self.mode == "key" and not self.keys:
            raise ValueError("mode 'key' needs at least one key hash")
        return self
