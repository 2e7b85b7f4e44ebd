"""The gateway policy derived from a simulator fleet file.

The fleet format itself (``FleetConfig``, ``GroupConfig``, ``load_fleet``) belongs to the
simulator (``loadtests.sim.fleet``) and is used here as is. Replica ``i`` of a group is named
``<group>-<i>`` and listens on ``base_port + i``; a group with ``base_port: 0`` (any free
port) cannot be addressed from outside and is rejected. The derived gateway policy has one
backend per replica, one pool per group, one public model per group named after it, and
``auto`` routed by the gateway with the first group as default pool.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from loadtests.sim.fleet import FleetConfig


@dataclass(frozen=True, slots=True)
class Replica:
    """Where one simulated replica answers, as the runner addresses it."""

    name: str
    group: str
    engine: str
    served_model: str
    url: str


def replicas(fleet: FleetConfig) -> list[Replica]:
    """Every replica of the fleet, group by group, at ``base_port + i``."""
    if not fleet.groups:
        raise ValueError("the fleet has no groups")
    out: list[Replica] = []
    for g in fleet.groups:
        if g.base_port == 0:
            raise ValueError(f"fleet group {g.name!r}: base_port 0 (any port) has no fixed URL")
        out += [
            Replica(
                name=f"{g.name}-{i}",
                group=g.name,
                engine=g.engine,
                served_model=g.served_model,
                url=f"http://{fleet.host}:{g.base_port + i}",
            )
            for i in range(g.replicas)
        ]
    return out


def policy_for(fleet: FleetConfig, max_inflight: int = 32) -> dict[str, Any]:
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
