"""Workload schema: arrivals, request classes, lengths and SLOs, loaded from YAML.

Every model forbids unknown keys so a typo in a workload file fails loudly. A workload
mixes request classes by ``weight``; each class says how to build its messages:

- ``synthetic``: a ShareGPT-like single user turn of ``prompt_tokens`` filler tokens.
- ``tenant_chat``: one long system prompt per tenant (a prefix shared by all tenants plus a
  per-tenant part) carrying a volatile timestamp and request id at its head or tail, then a
  short user turn; sends ``x-gateway-session`` and optionally a per-tenant API key.
- ``faq``: questions drawn Zipf-like from a pool, each asked in one of several paraphrases.
- ``chitchat``: short easy small talk.
- ``hard_task``: multi-step code or maths prompts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from loadtests.loadgen.arrivals import ArrivalSpec, Trace
from loadtests.loadgen.distributions import Fixed, LengthDist

Priority = Literal["critical", "standard", "sheddable"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Slo(_Strict):
    ttft_ms: float | None = Field(default=None, gt=0)
    tpot_ms: float | None = Field(default=None, gt=0)


class _Class(_Strict):
    name: str
    weight: float = Field(default=1.0, gt=0)
    model: str | None = None
    output_tokens: LengthDist = Fixed(value=128)
    temperature: float | None = Field(default=None, ge=0)
    priority: Priority | None = None
    headers: dict[str, str] = Field(default_factory=dict)


class Synthetic(_Class):
    kind: Literal["synthetic"] = "synthetic"
    prompt_tokens: LengthDist
    system_prompt: str | None = None


class TenantChat(_Class):
    kind: Literal["tenant_chat"] = "tenant_chat"
    tenants: int = Field(ge=1)
    shared_prefix_tokens: int = Field(default=0, ge=0)
    tenant_prefix_tokens: int = Field(ge=1)
    volatile_position: Literal["head", "tail", "none"] = "head"
    user_tokens: LengthDist = Fixed(value=32)
    sessions_per_tenant: int = Field(default=4, ge=1)
    api_key_template: str | None = None


class Faq(_Class):
    kind: Literal["faq"] = "faq"
    questions: int = Field(ge=1)
    paraphrases: int = Field(default=4, ge=1)
    zipf_s: float = Field(default=1.0, ge=0)


class ChitChat(_Class):
    kind: Literal["chitchat"] = "chitchat"


class HardTask(_Class):
    kind: Literal["hard_task"] = "hard_task"


RequestClass = Annotated[
    Synthetic | TenantChat | Faq | ChitChat | HardTask, Field(discriminator="kind")
]


class Workload(_Strict):
    name: str
    description: str = ""
    model: str = "auto"
    temperature: float = Field(default=0.7, ge=0)
    arrival: ArrivalSpec
    duration_s: float | None = Field(default=None, gt=0)
    max_requests: int | None = Field(default=None, ge=1)
    slo: Slo = Slo()
    headers: dict[str, str] = Field(default_factory=dict)
    classes: list[RequestClass] = Field(default_factory=list)

    @model_validator(mode="after")
    def _classes_unless_trace(self) -> Workload:
        if not self.classes and not isinstance(self.arrival, Trace):
            raise ValueError("a workload needs request classes unless it replays a trace")
        names = [c.name for c in self.classes]
        if len(set(names)) != len(names):
            raise ValueError("request class names must be unique")
        return self


def load_workload(path: str | Path) -> Workload:
    """Parse and validate a workload file; a trace path is resolved next to the file."""
    path = Path(path)
    data = yaml.safe_load(path.read_text())
    workload = Workload.model_validate(data)
    arrival = workload.arrival
    if isinstance(arrival, Trace) and not Path(arrival.path).is_absolute():
        resolved = arrival.model_copy(update={"path": str(path.parent / arrival.path)})
        workload = workload.model_copy(update={"arrival": resolved})
    return workload
