"""Policy schema: backends (inference server replicas), public models and health checks."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from gateway.policy.schema._base import Name, PositiveSeconds, _Strict


class Engine(StrEnum):
    VLLM = "vllm"
    TGI = "tgi"
    OPENAI = "openai"
    LLAMACPP = "llamacpp"


class Backend(_Strict):
    """One inference server replica."""

    name: Name
    url: str = Field(description="Base URL of the server, e.g. http://10.0.0.5:8000")
    engine: Engine = Engine.OPENAI
    model: str = Field(min_length=1, description="The model name the backend serves")
    pool: Name
    max_inflight: int = Field(default=64, ge=1, le=100_000)
    api_key_env: Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")] | None = Field(
        default=None,
        description="Environment variable holding the key sent upstream as a Bearer token",
    )

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        rest = value.split("://", 1)[1]
        if not rest or rest.startswith("/"):
            raise ValueError("must name a host")
        return value.rstrip("/")


class Model(_Strict):
    """A public model name: either pinned to a pool or routed by the gateway."""

    pool: Name | None = None
    route: Literal["auto"] | None = None
    description: str | None = None

    @model_validator(mode="after")
    def _one_target(self) -> Model:
        if (self.pool is None) == (self.route is None):
            raise ValueError("give exactly one of 'pool' or 'route'")
        return self


class Health(_Strict):
    """Active health checks of each backend."""

    interval_s: PositiveSeconds = 2.0
    timeout_s: PositiveSeconds = 2.0
    failures_to_eject: int = Field(default=2, ge=1, le=100)
    successes_to_restore: int = Field(default=1, ge=1, le=100)
    scrape_interval_s: PositiveSeconds = Field(
        default=1.0, description="How often vLLM/TGI load metrics are read, for routing"
    )
