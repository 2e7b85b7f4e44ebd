"""The SLO benchmark's targets on one simulated fleet, and one scenario through one target.

Targets (``TARGETS``): ``direct`` (clients round-robin over the replicas), ``gateway`` (our
gateway under its DEFAULT policy: ``default_policy``, backends and models only, generated from
the fleet), ``gateway-overload`` (``policies/bench-overload.yaml`` with its backends moved onto
this fleet's replicas, ``overload_policy``), and the peers of ``loadtests.peers``: LiteLLM
(least-busy), vllm-router (round robin) and nginx (least_conn with a connection cap, 429
beyond; the closest it has to admission control), and ``refuse-all`` (``loadtests.slo.refuser``:
503 to everything at once, no fleet; the client's floor for a refusal). The replicas row's
``gateway-x2`` and ``gateway-x2-cluster`` (``loadtests.slo.replicas``) are two gateway
processes on one fleet. Every run starts a fresh fleet and target
(``loadtests.peers.load_suite.serving``) and stops both after the last answer; the gateways'
``/metrics`` are read before they stop. Every replica serves one neutral model name
(``SERVED_MODEL``, see ``loadtests.peers.fleets.rename_model``), which every request asks for.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx2 as httpx

from gateway.children import StartupError
from loadtests.kit.ports import port_taken
from loadtests.loadgen.client import Target
from loadtests.loadgen.fleet import replicas
from loadtests.loadgen.report import write_jsonl
from loadtests.peers.load_suite import Bench, client_targets, serving
from loadtests.peers.targets import Setup
from loadtests.sim.fleet import FleetConfig
from loadtests.slo.drive import Outcome, drive
from loadtests.slo.plans import Scenario
from loadtests.slo.refuser import NAME as REFUSER
from loadtests.slo.refuser import refusing
from loadtests.slo.replicas import NAMES as REPLICATED
from loadtests.slo.replicas import PROCESSES, gateways

TARGETS = ("direct", "gateway", "gateway-overload", "litellm", "vllm-router", "nginx", REFUSER)
# Ports of the targets ``loadtests.peers.targets.port_of`` does not know, past the base port
# (``port_of`` takes 1 to 5; these stay within the base port's block of ten).
OWN_PORTS = {REFUSER: 6, "gateway-x2": 7, "redis": 9}
SERVED_MODEL = "sim-slo-engine"


def default_policy(fleet: FleetConfig) -> dict[str, Any]:
    """What a new user writes: one backend per replica, one model per group, nothing else."""
    reps = replicas(fleet)
    backends = [
        {"name": r.name, "url": r.url, "engine": r.engine, "model": r.served_model, "pool": r.group}
        for r in reps
    ]
    models = {r.served_model: {"pool": r.group} for r in reps}
    return {"backends": backends, "models": models}


def overload_policy(source: dict[str, Any], fleet: FleetConfig) -> dict[str, Any]:
    """``source`` (bench-overload.yaml) with backend ``i`` moved onto replica ``i`` (URL and
    served model) and each served model mapped to that backend's pool; all else as written."""
    reps = replicas(fleet)
    backends = list(source["backends"])
    if len(backends) != len(reps):
        raise ValueError(f"the policy has {len(backends)} backends, the fleet {len(reps)}")
    pairs = list(zip(backends, reps, strict=True))
    moved = [{**b, "url": r.url, "model": r.served_model} for b, r in pairs]
    served = {r.served_model: {"pool": b["pool"]} for b, r in pairs}
    models = {**source.get("models", {}), **served}
    return {**source, "backends": moved, "models": models}


def peer_setup(nginx_cap: int) -> Setup:
    return Setup(
        litellm_strategy="least-busy",
        router_policy="round_robin",
        nginx_balance="least_conn",
        nginx_limit=nginx_cap,
        router_limit=None,
        gateway_note="default policy: backends and models only",
    )


def target_notes(setup: Setup, overload_source: Path) -> dict[str, str]:
    notes = setup.notes()
    notes["gateway-overload"] = f"{overload_source.name}, backends moved onto this fleet"
    notes[REFUSER] = ("nginx answering 503 to every request at once, no fleet: the client's "
                      "floor for a refusal (rows where some refusals are expected)")  # fmt: skip
    notes["gateway-x2"] = (f"{PROCESSES} gateway processes, default policy, one fleet; "
                           "requests alternate between them")  # fmt: skip
    notes["gateway-x2-cluster"] = "the same with the policy's cluster section on (redis-server)"
    return notes


@dataclass(frozen=True, slots=True)
class Arena:
    """Where every run happens: the peers' bench (its front carries the default policy) and
    the overload policy's text."""

    bench: Bench
    overload_policy: str


def _peer_and_bench(name: str, arena: Arena) -> tuple[str, Bench]:
    if name == "gateway-overload":
        front = replace(arena.bench.front, gateway_policy=arena.overload_policy)
        return "gateway", replace(arena.bench, front=front)
    return name, arena.bench


def _scrape(url: str) -> str | None:
    try:
        with httpx.Client(timeout=10.0, trust_env=False) as http:
            response = http.get(url)
    except httpx.HTTPError:
        return None
    return response.text if response.status_code == 200 else None


@dataclass(frozen=True, slots=True)
class TargetRun:
    outcome: Outcome
    metrics_text: str | None  # the gateway's /metrics after the run; None for others


def own_ports(name: str, base: int) -> tuple[int, ...]:
    """The ports target ``name`` listens on beyond ``port_of``'s (none for the others)."""
    if name == REFUSER:
        return (base + OWN_PORTS[REFUSER],)
    if name in REPLICATED:
        first = base + OWN_PORTS["gateway-x2"]
        redis = (base + OWN_PORTS["redis"],) if name == "gateway-x2-cluster" else ()
        return (*range(first, first + PROCESSES), *redis)
    return ()


@contextmanager
def _targets(name: str, arena: Arena, out: Path) -> Iterator[tuple[list[Target], list[str]]]:
    """Target ``name`` up (on a fresh fleet, but the refuser: it needs none); its client
    targets and the gateway ``/metrics`` URLs to read after the run."""
    base = arena.bench.base_port
    ports = own_ports(name, base)
    if taken := [p for p in ports if port_taken(p)]:
        raise StartupError(f"port {taken[0]} is taken by another process")
    if name == REFUSER:
        with refusing(ports[0], out, arena.bench.binaries.nginx,
                      arena.bench.startup_timeout_s) as launch:  # fmt: skip
            yield [Target(launch.url, SERVED_MODEL)], []
        return
    if name in REPLICATED:
        with gateways(name, arena.bench, out, ports[:PROCESSES], base + OWN_PORTS["redis"]) as got:
            yield got, [t.base_url + "/metrics" for t in got]
        return
    peer, bench = _peer_and_bench(name, arena)
    with serving(peer, bench, out) as launch:
        yield (
            client_targets(launch, bench.front),
            ([launch.url + "/metrics"] if peer == "gateway" else []),
        )


def run_target(
    name: str,
    scenario: Scenario,
    arena: Arena,
    out: Path,
    first_token_timeout_s: float,
    retry_cap_s: float,
) -> TargetRun:
    """The scenario through target ``name`` on a fresh fleet; records written to ``out``."""
    with _targets(name, arena, out) as (targets, metrics_urls):
        outcome = asyncio.run(drive(scenario, targets, first_token_timeout_s, retry_cap_s))
        texts = [_scrape(url) for url in metrics_urls]
    metrics = "\n".join(t for t in texts if t) if metrics_urls else None
    write_jsonl(out / "records.jsonl", [r.to_dict() for r in outcome.records])
    if outcome.retries:
        write_jsonl(out / "retries.jsonl", [r.to_dict() for r in outcome.retries.values()])
    if metrics is not None:
        (out / "metrics.txt").write_text(metrics)
    return TargetRun(outcome, metrics)
