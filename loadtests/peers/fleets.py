"""The simulated fleets of the comparison, moved to ports of their own, and what they front.

The project's fleet files use fixed ports that other benchmarks on the same machine may hold,
so each run writes a copy with every group's ``base_port`` moved by ``offset``; a gateway
policy written for the original ports gets its backend URLs moved the same way
(``shift_policy``). ``rename_model`` gives the replicas a neutral served-model name, the
same for every target: LiteLLM picks its token counter by model name and, for a name with
"llama-3" in it, fetches a tokenizer from a model hub on the request path, which this
machine cannot reach (it retries for ~20 s). Only the name changes; the simulated model
profile stays. ``front_for`` turns a fleet into the ``Front`` every target serves.

Parameters: ``offset`` (ports added to every ``base_port``), ``policy`` (our gateway's
policy for the fleet, as a dict).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import yaml

from loadtests.loadgen.fleet import replicas
from loadtests.peers.configs import Upstream
from loadtests.peers.targets import Front
from loadtests.sim.fleet import FleetConfig


def shift_fleet(fleet: FleetConfig, offset: int) -> FleetConfig:
    """The same fleet with every group's ``base_port`` moved by ``offset``."""
    groups = [g.model_copy(update={"base_port": g.base_port + offset}) for g in fleet.groups]
    return fleet.model_copy(update={"groups": groups})


def rename_model(
    fleet: FleetConfig, policy: dict[str, Any], name: str
) -> tuple[FleetConfig, dict[str, Any]]:
    """Every replica serves ``name``; the policy's backends ask for it."""
    groups = [g.model_copy(update={"served_model": name}) for g in fleet.groups]
    backends = [{**b, "model": name} for b in policy["backends"]]
    return fleet.model_copy(update={"groups": groups}), {**policy, "backends": backends}


def write_fleet(fleet: FleetConfig, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(fleet.model_dump(mode="json"), sort_keys=False))
    return path


def _shift_url(url: str, offset: int) -> str:
    parts = urlsplit(url)
    if parts.port is None or parts.hostname is None:
        return url
    return urlunsplit(parts._replace(netloc=f"{parts.hostname}:{parts.port + offset}"))


def shift_policy(policy: dict[str, Any], offset: int) -> dict[str, Any]:
    """A copy of a gateway policy whose backend URLs' ports moved by ``offset``."""
    backends = [{**b, "url": _shift_url(str(b["url"]), offset)} for b in policy["backends"]]
    return {**policy, "backends": backends}


def front_for(fleet: FleetConfig, policy: dict[str, Any]) -> Front:
    """Every replica an upstream; peers are asked for the served model (one model per
    comparison: the first group's)."""
    reps = replicas(fleet)
    model = reps[0].served_model
    upstreams = tuple(Upstream(r.url, r.served_model) for r in reps if r.served_model == model)
    return Front(upstreams, model, "hosted_vllm", yaml.safe_dump(policy, sort_keys=False))
