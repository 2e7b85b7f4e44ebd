"""Open-loop workloads on a simulated fleet through each target: one run per target.

Method (``loadtests.compare``'s, for any target): every run gets a freshly started fleet
(caches and queues start cold), then the target in front of it, then the workload with the
same seed; the replicas' counters (``counters``) are read before both stop. ``direct`` sends
round-robin to the replicas with their served model; our gateway gets the workload's models
mapped onto its policy; the peers are asked for the served model. Runs of one scenario are
back to back, target after target (interleaved with nothing else), in the order given.

Parameters: ``scenario`` (a name for folders), ``spec`` (the workload, seed, rate,
duration), ``fleet`` and ``fleet_path`` (already moved to the comparison's ports),
``setup`` (each peer's closest configuration), ``counters`` (replica counters to read).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from loadtests.compare.runs import gateway_model_map
from loadtests.kit.processes import fleet_up
from loadtests.loadgen.client import Target
from loadtests.loadgen.fleet import replicas
from loadtests.loadgen.record import RequestRecord
from loadtests.loadgen.sampler import read_counters
from loadtests.loadgen.session import LoadSpec, perform
from loadtests.peers.install import Binaries
from loadtests.peers.targets import (
    LAUNCH_ERRORS,
    Front,
    Launch,
    Setup,
    launched,
    plan_launch,
    port_of,
)
from loadtests.sim.fleet import FleetConfig


@dataclass(frozen=True, slots=True)
class Bench:
    """Where and how a scenario runs."""

    fleet: FleetConfig
    fleet_path: Path
    front: Front
    setup: Setup
    root: Path
    base_port: int
    binaries: Binaries
    startup_timeout_s: float = 90.0


def client_targets(launch: Launch, front: Front) -> list[Target]:
    """Where clients send: every upstream round-robin for ``direct``, else the target."""
    if launch.name == "direct":
        return [Target(u.url, u.model) for u in front.upstreams]
    return [Target(launch.url, launch.model, dict(launch.headers))]


@contextmanager
def serving(name: str, bench: Bench, out: Path) -> Iterator[Launch]:
    """A fresh fleet and target ``name`` in front of it (``bench.front``), up for the block;
    logs in ``out`` (``fleet.log``, ``process.log``)."""
    launch = plan_launch(name, bench.front, bench.setup, port_of(name, bench.base_port), out,
                         bench.binaries)  # fmt: skip
    with (
        fleet_up(bench.fleet, bench.fleet_path, out / "fleet.log", bench.startup_timeout_s),
        launched(launch, out / "process.log", bench.startup_timeout_s),
    ):
        yield launch


def run_one(
    name: str, spec: LoadSpec, bench: Bench, out: Path, counters: Sequence[str] = ()
) -> tuple[dict[str, Any], list[RequestRecord]]:
    """The workload through target ``name`` on a fresh fleet; its summary and records."""
    replica_metrics = [r.url + "/metrics" for r in replicas(bench.fleet)]
    with serving(name, bench, out) as launch:
        if name == "gateway":
            policy = next(iter(launch.files))
            spec = replace(spec, model_map=gateway_model_map(spec, policy))
        metrics = [launch.url + "/metrics"] if name == "gateway" else []
        summary, result = perform(
            spec, client_targets(launch, bench.front), out, mode=name,
            metrics_urls=[*metrics, *replica_metrics],
        )  # fmt: skip
        if counters:
            summary["fleet_counters"] = read_counters(replica_metrics, counters)
    return summary, result.records


def run_scenario(
    scenario: str,
    targets: Sequence[str],
    spec: LoadSpec,
    bench: Bench,
    counters: Sequence[str] = (),
    failures: dict[str, str] | None = None,
) -> dict[str, tuple[dict[str, Any], list[RequestRecord]]]:
    """Every target in turn on the same workload and seed; a target that does not start is
    left out (and named in ``failures``) so the others still run."""
    results = {}
    for name in targets:
        out = bench.root / scenario / name
        try:
            results[name] = run_one(name, spec, bench, out, counters)
        except LAUNCH_ERRORS as exc:
            sys.stderr.write(f"[{scenario}] {name} did not start: {exc}\n")
            if failures is not None:
                failures[f"{scenario}/{name}"] = str(exc)
            continue
        s = results[name][0]
        sys.stderr.write(
            f"[{scenario}] {name}: TTFT p50 {s['ttft_ms']['p50']} p99 {s['ttft_ms']['p99']} ms, "
            f"goodput {s['goodput_rps']:.2f}/s, shed {s['shed_rate']:.1%}, "
            f"errors {s['error_rate']:.1%} {s['errors']}\n"
        )
    return results
