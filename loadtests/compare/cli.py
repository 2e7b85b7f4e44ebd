"""``python -m loadtests.compare``: one workload, same seed, direct round-robin vs gateway.

Fairness choice: the two runs are sequential and each gets a freshly started simulated fleet
(so prefix caches and queues start cold for both): (a) fleet up → direct round-robin over
every replica (or ``--direct-groups``) with each backend's served model → fleet down;
(b) fleet up → gateway up under the policy → run through the gateway → both down. Child
processes are always stopped, even when a run fails.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import yaml

from gateway.children import running
from loadtests.loadgen.cli import add_load_arguments, spec_from_args
from loadtests.loadgen.client import Target
from loadtests.loadgen.comparison import ratio_rows, ratio_table, write_comparison
from loadtests.loadgen.fleet import policy_for, replicas, write_policy
from loadtests.loadgen.plots import plot_ttft_cdf
from loadtests.loadgen.runner import RunResult
from loadtests.loadgen.sampler import read_counters
from loadtests.loadgen.session import LoadSpec, perform
from loadtests.loadgen.workload import load_workload
from loadtests.sim.fleet import FleetConfig, load_fleet


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m loadtests.compare", description=__doc__)
    add_load_arguments(parser)
    parser.add_argument("--fleet", required=True, type=Path, help="simulator fleet YAML")
    parser.add_argument("--policy", type=Path, help="gateway policy (default: derived)")
    parser.add_argument("--gateway-port", type=int, default=8080)
    parser.add_argument("--direct-groups", help="comma-separated fleet groups for direct mode")
    parser.add_argument("--out", type=Path, default=Path("loadtests/reports/out/compare"))
    parser.add_argument("--startup-timeout", type=float, default=60.0)
    return parser


def fleet_cmd(path: Path) -> list[str]:
    """The simulator's command line for a fleet file."""
    return [sys.executable, "-m", "loadtests.sim", "--fleet", str(path)]


def fleet_up(
    fleet: FleetConfig, fleet_path: Path, log_path: Path, timeout_s: float
) -> AbstractContextManager[subprocess.Popen[bytes]]:
    """A fresh simulated fleet, healthy on entry and stopped on exit (any target's runs)."""
    health = [r.url + "/health" for r in replicas(fleet)]
    return running(fleet_cmd(fleet_path), health, log_path, timeout_s=timeout_s)


def gateway_cmd(policy: Path, port: int) -> list[str]:
    script = Path(sys.executable).with_name("latency-gateway")
    head = [str(script)] if script.exists() else [sys.executable, "-m", "gateway"]
    return [*head, "serve", "--policy", str(policy), "--host", "127.0.0.1", "--port", str(port)]


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
        running(gateway_cmd(policy, args.gateway_port), [gateway_url + "/readyz"],
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


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    spec = spec_from_args(args)
    fleet = load_fleet(args.fleet)
    policy: Path = args.policy or args.out / "policy.yaml"
    if args.policy is None:
        write_policy(policy, policy_for(fleet))
    groups = set(args.direct_groups.split(",")) if args.direct_groups else None
    direct, direct_result = direct_run(spec, fleet, args.fleet, groups, args)
    gateway, gateway_result = gateway_run(spec, fleet, args.fleet, policy, args)
    rows = ratio_rows(direct, gateway)
    meta = {
        "workload": args.workload.stem,
        "fleet": str(args.fleet),
        "policy": str(policy),
        "seed": spec.seed,
        "rate": spec.rate,
        "order": "direct then gateway, fresh fleet each",
    }
    write_comparison(args.out, rows, meta, {"direct": direct, "gateway": gateway})
    runs = {"direct": direct_result.records, "gateway": gateway_result.records}
    if spec.plots:
        plot_ttft_cdf(runs, args.out / "ttft_cdf.png")
    print(ratio_table(rows))
    print(f"\nreports in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
