"""The simulator's fleet file as the comparison runner sees it, and the policy derived from it.

Only the keys the runner needs are read (unknown keys are ignored here because the
simulator owns and validates this format). The derived gateway policy has one backend per
replica (``<group>-<i>`` at ``base_port + i``), one pool per group, one public model per group
named after it, and ``auto`` routed by the gateway with the first group as default pool.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field


class _Tolerant(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class FleetGroup(_Tolerant):
    name: str
    engine: str = "vllm"
    served_model: str
    replicas: int = Field(default=1, ge=1)
    base_port: int = Field(ge=1, le=65535)


class Fleet(_Tolerant):
    host: str = "127.0.0.1"
    groups: list[FleetGroup] = Field(min_length=1)


@dataclass(frozen=True, slots=True)
class Replica:
    name: str
    group: str
    engine: str
    served_model: str
    url: str


def load_fleet(path: Path) -> Fleet:
    return Fleet.model_validate(yaml.safe_load(path.read_text()))


def replicas(fleet: Fleet) -> list[Replica]:
    return [
        Replica(
            name=f"{g.name}-{i}",
            group=g.name,
            engine=g.engine,
            served_model=g.served_model,
            url=f"http://{fleet.host}:{g.base_port + i}",
        )
        for g in fleet.groups
        for i in range(g.replicas)
    ]


def policy_for(fleet: Fleet, max_inflight: int = 32) -> dict[str, Any]:
    """A minimal gateway policy serving the fleet (see the module docstring)."""
    backends = [
        {
            "name": r.name,
            "url": r.url,
            "engine": r.engine,
            "model": r.served_model,
            "pool": r.group,
            "max_inflight": max_inflight,
        }
        for r in replicas(fleet)
    ]
    models: dict[str, Any] = {g.name: {"pool": g.name} for g in fleet.groups}
    models["auto"] = {"route": "auto"}
    return {
        "version": 1,
        "backends": backends,
        "models": models,
        "routing": {"default_pool": fleet.groups[0].name},
    }


def write_policy(path: Path, policy: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(policy, sort_keys=False))
