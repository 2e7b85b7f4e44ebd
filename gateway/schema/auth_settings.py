"""Policy schema: tenants, their API key hashes and rate limits."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from gateway.schema.routing_settings import PriorityName
from gateway.schema.strict import Name, _Strict

KeyHash = Annotated[str, Field(pattern=r"^sha256:[0-9a-f]{64}$")]


class RateLimit(_Strict):
    """Token buckets of a tenant: full at the per-minute figure, refilled evenly."""

    requests_per_minute: int | None = Field(
        description="Requests per minute (refilled evenly); none: no request limit",
        default=None,
        ge=1,
        le=10_000_000,
    )
    tokens_per_minute: int | None = Field(
        default=None, ge=1, le=10_000_000_000, description="Prompt estimate plus max_tokens"
    )


class Tenant(_Strict):
    """Who may call the gateway: key hashes (`latency-gateway hash-key`), models, limits."""

    keys: list[KeyHash] = Field(
        description="Hashes of the tenant's keys (`latency-gateway hash-key`); each key belongs "
        "to one tenant",
        min_length=1,
    )
    models: list[Name] | None = Field(default=None, description="Public models (default: all)")
    priority: PriorityName = Field(
        default="standard",
        description="The highest priority its requests get; x-gateway-priority may only lower it",
    )
    rate_limit: RateLimit = Field(default=RateLimit(), description="The tenant's token buckets")


class Auth(_Strict):
    """Gateway API keys. With tenants, every /v1 request needs a valid key."""

    tenants: dict[Name, Tenant] = Field(
        description="Tenants by name; with any, every /v1 request needs a key", default_factory=dict
    )
    rate_limit_store: Literal["memory", "redis"] = Field(
        default="memory", description="redis: buckets shared by replicas (memory if it fails)"
    )
    redis_url: str | None = Field(default=None, description="e.g. redis://127.0.0.1:6379/0")

    @model_validator(mode="after")
    def _url_for_redis(self) -> Auth:
        if self.rate_limit_store == "redis" and not self.redis_url:
            raise ValueError("rate_limit_store 'redis' needs redis_url")
        return self
