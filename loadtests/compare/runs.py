"""The two runs of a comparison: round-robin straight to the fleet, and through a gateway.

Fairness choice: each run gets a freshly started simulated fleet (so prefix caches and queues
start cold for both), and the runs are sequential: (a) fleet up → direct round-robin over
every replica (or the chosen groups) with each backend's served model → fleet down; (b) fleet
up → gateway up under the policy → run through the gateway → both down. Child processes are
always stopped, even when a run fails. Parameters: the load spec, the fleet, the policy, and
``args`` (``out``, ``gateway_port``, ``startup_timeout``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from gateway.children import running
from loadtests.kit.processes import fleet_cmd, gateway_cmd
from loadtests.loadgen.client import Target
from loadtests.loadgen.fleet import replicas
from loadtests.loadgen.runner import RunResult
from loadtests.loadgen.sampler import read_counters
from loadtests.loadgen.session import LoadSpec, perform
from loadtests.loadgen.workload import load_workload
from loadtests.sim.fleet import FleetConfig


def gateway_model_map(spec: LoadSpec, policy: Path) -> dict[str, str]:
    """Workload model names the policy lacks go to ``auto`` (or the first public model)."""
    models = list((yaml.safe_load(policy.read_text()) or {}).get("models", {}))
    fallback = "auto" if "auto" in models else models[0]
    workload = load_workload(spec.workload)
    names = {workload.model, *(c.model for c in workload.classes if c.model)}
    mapping = {n: fallback for n in names if n not in models}
    return {**mapping, **spec.model_map}


def direct_run(
    spec: LoadSpec,
    fleet: FleetConfig,
    fleet_path: Path,
    groups: set[str] | None,
    args: Any,
    counters: Sequence[str] = (),
) -> tuple[dict[str, Any], RunResult]:
    """Round-robin straight to the fleet's replicas; ``counters`` are read from them after."""
    reps = replicas(fleet)
    chosen = [r for r in reps if groups is None or r.group in groups]
    targets = [Target(r.url, r.served_model) for r in chosen]
    health = [r.url + "/health" for r in reps]
    with running(fleet_cmd(fleet_path), health, args.out / "direct" / "fleet.log",
                 timeout_s=args.startup_timeout):  # fmt: skip
        summary, result = perform(
            spec, targets, args.out / "direct", mode="direct",
            metrics_urls=[r.url + "/metrics" for r in chosen],
        )  # fmt: skip
        if counters:
            summary.update(_counters([r.url + "/metrics" for r in chosen], counters))
        return summary, result


def gateway_run(
    spec: LoadSpec,
    fleet: FleetConfig,
    fleet_path: Path,
    policy: Path,
    args: Any,
    counters: Sequence[str] = (),
    name: str = "gateway",
) -> tuple[dict[str, Any], RunResult]:
    """Through a gateway under ``policy``; ``counters`` are read from the replicas after."""
    reps = replicas(fleet)
    gateway_url = f"http://127.0.0.1:{args.gateway_port}"
    out = args.out / name
    with (
        running(fleet_cmd(fleet_path), [r.url + "/health" for r in reps], out / "fleet.log",
                timeout_s=args.startup_timeout),
        running(gateway_cmd(policy, args.gateway_port, getattr(args, "gateway_workers", 1)),
                [gateway_url + "/readyz"],
                out / "gateway.log", timeout_s=args.startup_timeout),
    ):  # fmt: skip
        metrics = [gateway_url + "/metrics", *(r.url + "/metrics" for r in reps)]
        mapped = LoadSpec(**{**_fields(spec), "model_map": gateway_model_map(spec, policy)})
        summary, result = perform(
            mapped, [Target(gateway_url)], out, mode="gateway", metrics_urls=metrics
        )
        if counters:
            summary.update(_counters([r.url + "/metrics" for r in reps], counters))
        return summary, result


def _counters(urls: Sequence[str], names: Sequence[str]) -> dict[str, Any]:
    """The replicas' counters, summed (``fleet_counters``) and per replica."""
    each = {url: read_counters([url], names) for url in urls}
    total = {name: sum(c[name] for c in each.values()) for name in names}
    return {"fleet_counters": total, "replica_counters": each}


def _fields(spec: LoadSpec) -> dict[str, Any]:
    return {name: getattr(spec, name) for name in LoadSpec.__dataclass_fields__}
