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


_LABEL = r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOSTNAME = rf"^{_LABEL}(\.{_LABEL})*\.?$"


class Discover(_Strict):
    """Replicas found by a DNS name (a Kubernetes headless Service, a compose service),
    re-resolved every ``interval_s``: each address is a replica ``<name>-<slot>``."""

    dns: Annotated[str, Field(max_length=253, pattern=_HOSTNAME)] = Field(
        description="The name whose A/AAAA records are the replicas (one per address)"
    )
    port: int = Field(ge=1, le=65535, description="The port every replica listens on")
    scheme: Literal["http", "https"] = Field(
        default="http",
        description="http or https (https: the certificate is checked against the address)",
    )
    path: Annotated[str, Field(pattern=r"^(/[A-Za-z0-9._~\-/]*)?$")] = Field(
        default="", description="Root prefix or API base below each address (as in url)"
    )
    interval_s: PositiveSeconds = Field(default=5.0, description="How often the name is resolved")
    max_replicas: int = Field(
        default=64, ge=1, le=1024, description="Addresses beyond this many are left out"
    )

    def url_of(self, host: str) -> str:
        """The URL of the replica at ``host`` (an address, or the name itself)."""
        bracketed = f"[{host}]" if ":" in host else host
        return f"{self.scheme}://{bracketed}:{self.port}{self.path}".rstrip("/")


class Backend(_Strict):
    """One inference server replica, or (``discover``) the replicas a DNS name resolves to."""

    name: Name = Field(description="Unique name of the replica (metric label, x-gateway-backend)")
    url: str | None = Field(
        default=None,
        description="The server's root (http://10.0.0.5:8000) or its API base "
        "(https://host/v1): a trailing /v1 is the API's, the rest is the root",
    )
    discover: Discover | None = Field(
        default=None, description="Instead of url: the replicas behind a DNS name"
    )
    engine: Engine = Field(
        default=Engine.OPENAI,
        description="Inference server kind: decides the health probe and which load metrics are "
        "scraped",
    )
    model: str = Field(min_length=1, description="The model name the backend serves")
    pool: Name = Field(
        description="The pool this replica serves in; pools exist because backends name them"
    )
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
    tls: BackendTls | None = Field(
        default=None,
        description="TLS settings for an https:// backend (default: verify against the system's "
        "CAs)",
    )
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
    def _http_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
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
        if (self.url is None) == (self.discover is None):
            raise ValueError("give exactly one of 'url' or 'discover'")
        if self.tls is not None and self.scheme != "https":
            raise ValueError("tls applies to https:// URLs only")
        return self

    @property
    def address(self) -> str:
        """The URL of a listed backend (discovering ones are expanded into listed ones
        before anything asks: ``policy/discovered.py``)."""
        if self.url is None:
            raise ValueError(f"backend {self.name} discovers its replicas: it has no url")
        return self.url

    @property
    def scheme(self) -> str:
        if self.discover is not None:
            return self.discover.scheme
        assert self.url is not None
        return self.url.split("://", 1)[0]


class Model(_Strict):
    """A public model name: either pinned to a pool or routed by the gateway."""

    pool: Name | None = Field(
        default=None, description="The pool this public model is served by (give this or route)"
    )
    route: Literal["auto"] | None = Field(
        default=None,
        description="`auto`: the gateway chooses the pool by the routing rules and the "
        "difficulty split (give this or pool)",
    )
    description: str | None = Field(
        default=None, description="Free text about the model, for the people reading the policy"
    )

    @model_validator(mode="after")
    def _one_target(self) -> Model:
        if (self.pool is None) == (self.route is None):
            raise ValueError("give exactly one of 'pool' or 'route'")
        return self


class Health(_Strict):
    """Active health checks of each backend."""

    interval_s: PositiveSeconds = Field(
        default=2.0, description="Seconds between health probes of a replica"
    )
    timeout_s: PositiveSeconds = Field(default=2.0, description="Seconds a probe may take")
    failures_to_eject: int = Field(
        description="Consecutive failures (probes or refused connections) that mark a replica "
        "unhealthy",
        default=2,
        ge=1,
        le=100,
    )
    successes_to_restore: int = Field(
        description="Consecutive successful probes that make it healthy again",
        default=1,
        ge=1,
        le=100,
    )
    scrape_interval_s: PositiveSeconds = Field(
        default=1.0, description="How often vLLM/TGI load metrics are read, for routing"
    )
