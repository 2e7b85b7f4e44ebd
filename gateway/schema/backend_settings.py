"""Policy schema: backends (inference server replicas), public models and health checks."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from gateway.schema.strict import Name, PositiveSeconds, _Strict


class Engine(StrEnum):
    VLLM = "vllm"
    TGI = "tgi"
    OPENAI = "openai"
    LLAMACPP = "llamacpp"


ExtraRoute = Literal["tokenize", "detokenize", "rerank", "score"]
# How a stream cut short on this backend is continued on another: vLLM and SGLang continue
# the last (assistant) message; llama.cpp's server continues an assistant prefill; "none" for
# an engine that can do neither. "auto": by the engine (vllm: continue_final_message,
# llamacpp: assistant_prefill, tgi and openai: none).
ContinueWith = Literal["auto", "none", "continue_final_message", "assistant_prefill"]


class BackendTls(_Strict):
    """TLS to an https:// backend (default: verify against the system's CAs)."""

    ca_file: str | None = Field(
        default=None, min_length=1, description="PEM bundle of the CAs to trust instead"
    )
    verify: bool = Field(
        default=True, description="Check the certificate and host name (false: trust anything)"
    )
    client_cert: str | None = Field(
        default=None, min_length=1, description="PEM client certificate (mutual TLS)"
    )
    client_key: str | None = Field(
        default=None, min_length=1, description="PEM key of client_cert, if not in that file"
    )

    @model_validator(mode="after")
    def _consistent(self) -> BackendTls:
        if self.client_key is not None and self.client_cert is None:
            raise ValueError("client_key needs client_cert")
        if not self.verify and self.ca_file is not None:
            raise ValueError("ca_file is unused when verify is false")
        return self


class Backend(_Strict):
    """One inference server replica."""

    name: Name
    url: str = Field(
        description="The server's root (http://10.0.0.5:8000) or its API base "
        "(https://host/v1): a trailing /v1 is the API's, the rest is the root"
    )
    engine: Engine = Engine.OPENAI
    model: str = Field(min_length=1, description="The model name the backend serves")
    pool: Name
    max_inflight: int | None = Field(
        default=None,
        ge=1,
        le=100_000,
        description="Hard cap on requests sent here at once (default: none; the engine's own "
        "reports and first tokens tell how much it takes)",
    )
    api_key_env: Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")] | None = Field(
        default=None,
        description="Environment variable holding the key sent upstream (see api_key_header)",
    )
    api_key_header: Literal["authorization", "api-key"] = Field(
        default="authorization",
        description="How the key travels: 'authorization' (Bearer token) or 'api-key' (Azure)",
    )
    tls: BackendTls | None = None
    trust_env: bool = Field(
        default=False,
        description="Use HTTP_PROXY/HTTPS_PROXY/ALL_PROXY/NO_PROXY from the environment",
    )
    continue_with: ContinueWith = Field(
        default="auto",
        description="How a stream this backend cut short is continued on another replica "
        "(auto: by the engine; a generic OpenAI-compatible server: none unless declared)",
    )
    extra_routes: list[ExtraRoute] = Field(
        default_factory=list,
        description="vLLM routes this backend serves beyond the OpenAI API, relayed by the "
        "gateway: tokenize (/tokenize), detokenize (/detokenize), rerank (/v1/rerank), "
        "score (/v1/score)",
    )

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        rest = value.split("://", 1)[1]
        if not rest or rest.startswith("/"):
            raise ValueError("must name a host")
        if "?" in rest or "#" in rest:
            raise ValueError("must not carry a query or fragment")
        return value.rstrip("/")

    @model_validator(mode="after")
    def _tls_for_https(self) -> Backend:
        if self.tls is not None and not self.url.startswith("https://"):
            raise ValueError("tls applies to https:// URLs only")
        return self


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
