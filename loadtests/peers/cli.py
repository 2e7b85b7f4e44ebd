"""``python -m loadtests.peers``: our gateway and the peer gateways side by side (issue 12).

One command: install the peers that are missing (``loadtests.peers.install``, never into
the project's environment), then for each suite start every target on 127.0.0.1 in front of
the same fleet, run the same workload and seed through each, stop them, and write
``report.md``, ``summary.json`` and PNG plots into ``--out``. Suites, in this order:

- ``overhead``: fake upstream, TTFT ratios to direct and max req/s at ``--levels``;
- ``bursty``: the overload bench (``sim/fleets/overload.yaml``, ``workloads/overload_burst``,
  our ``policies/bench-overload.yaml``) at ``--bursty-loads`` times capacity;
- ``prefix``: ``sim/fleets/prefix.yaml`` with ``workloads/tenant_prefix``;
- ``cancel``: client departures in each phase against the fake.

Each peer runs in its closest configuration per suite (``_bursty_setup``, ``_prefix_setup``)
and the tables say which. Fleets move to their own ports (``--fleet-port-offset``) so other
benchmarks on the machine cannot collide with them; targets listen on ``--base-port`` + 1..5.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from loadtests.kit.cli_words import chosen, load_average
from loadtests.loadgen.arrivals import OnOff
from loadtests.loadgen.fleet import policy_for
from loadtests.loadgen.plots import plot_ttft_cdf
from loadtests.loadgen.session import LoadSpec
from loadtests.loadgen.workload import load_workload
from loadtests.peers.cancel_suite import PHASES, CancelPlan, run_cancellation
from loadtests.peers.configs import RouterLimit
from loadtests.peers.fleets import (
    front_for,
    rename_model,
    shift_fleet,
    shift_policy,
    write_fleet,
)
from loadtests.peers.install import Binaries, ensure_all, versions
from loadtests.peers.load_suite import Bench, run_scenario
from loadtests.peers.overhead_suite import OverheadPlan, run_overhead
from loadtests.peers.report import Results, write
from loadtests.peers.tables import load_row
from loadtests.peers.targets import TARGETS, Setup
from loadtests.sim.fleet import load_fleet

HERE = Path(__file__).resolve().parent.parent
POLICIES = HERE.parent / "policies"
SUITES = ("overhead", "bursty", "prefix", "cancel")
SERVED_MODEL = "sim-8b-instruct"  # see loadtests.peers.fleets.rename_model
PREFIX_COUNTERS = ("vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m loadtests.peers", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--targets", default=",".join(TARGETS), help=f"of {TARGETS}")
    p.add_argument("--suites", default=",".join(SUITES), help=f"of {SUITES}")
    p.add_argument("--out", type=Path, default=HERE / "peers" / "results" / "out")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--base-port", type=int, default=19850)
    p.add_argument("--fleet-port-offset", type=int, default=10000)
    p.add_argument("--no-install", action="store_true", help="fail instead of installing")
    p.add_argument("--levels", default="1,16,64,128", help="overhead concurrencies")
    p.add_argument("--rounds", type=int, default=2, help="overhead rounds per target")
    p.add_argument("--round-s", type=float, default=3.0, help="overhead seconds per round")
    p.add_argument("--bursty-loads", default="1,3", help="multiples of capacity")
    p.add_argument("--bursty-duration", type=float, default=40.0, help="s (bursts every 20 s)")
    p.add_argument("--prefix-duration", type=float, default=60.0)
    p.add_argument("--prefix-rate", type=float, help="override the workload's 5 req/s")
    p.add_argument("--cancel-trials", type=int, default=30, help="per target and phase")
    p.add_argument("--cancel-phases", default=",".join(PHASES))
    p.add_argument("--startup-timeout", type=float, default=120.0)
    return p


def _bench(scenario: str, fleet_file: Path, policy: dict[str, Any] | None, setup: Setup,
           args: argparse.Namespace, binaries: Binaries) -> Bench:  # fmt: skip
    fleet = shift_fleet(load_fleet(fleet_file), args.fleet_port_offset)
    if policy is None:
        policy = policy_for(fleet, max_inflight=128)
        policy["rewrite"] = {"enabled": True}
    else:
        policy = shift_policy(policy, args.fleet_port_offset)
    fleet, policy = rename_model(fleet, policy, SERVED_MODEL)
    path = write_fleet(fleet, args.out / scenario / "fleet.yaml")
    return Bench(fleet, path, front_for(fleet, policy), setup, args.out, args.base_port,
                 binaries, args.startup_timeout)  # fmt: skip


def _bursty_setup() -> Setup:
    # The same in-flight cap as our policy (2 replicas x 24) where the peer has one.
    return Setup(
        litellm_strategy="least-busy",
        router_policy="round_robin",
        nginx_balance="least_conn",
        nginx_limit=48,
        router_limit=RouterLimit(max_concurrent=48, queue_size=3, queue_timeout_s=1),
        gateway_note="admission: 24 in flight per replica, queue 3, max wait 0.4 s, "
        "sheddable refused first (policies/bench-overload.yaml)",
    )


def _prefix_setup() -> Setup:
    return Setup(
        litellm_strategy="simple-shuffle",
        router_policy="cache_aware",
        nginx_balance="round_robin",
        gateway_note="prefix affinity + load scorers, prompt rewriting on",
    )


def _bursty(args: argparse.Namespace, targets: list[str], binaries: Binaries,
            results: Results) -> None:  # fmt: skip
    setup = _bursty_setup()
    policy = yaml.safe_load((POLICIES / "bench-overload.yaml").read_text())
    bench = _bench("bursty", HERE / "sim/fleets/overload.yaml", policy, setup, args, binaries)
    workload_path = HERE / "workloads/overload_burst.yaml"
    arrival = load_workload(workload_path).arrival
    if not isinstance(arrival, OnOff):
        raise SystemExit(f"{workload_path}: expected on/off arrivals")
    mean = arrival.mean_rate()  # as written, the workload's bursts are 3x capacity
    results.notes["bursty"] = setup.notes()
    for load in (float(x) for x in args.bursty_loads.split(",")):
        spec = LoadSpec(workload=workload_path, seed=args.seed, rate=mean * load / 3,
                        duration_s=args.bursty_duration, request_timeout_s=300,
                        plots=False)  # fmt: skip
        runs = run_scenario(f"bursty-{load:g}x", targets, spec, bench, (), results.failures)
        results.bursty += [load_row("bursty", f"{load:g}x", n, s) for n, (s, _) in runs.items()]
        plot_ttft_cdf({n: recs for n, (_, recs) in runs.items()},
                      args.out / f"bursty-{load:g}x-ttft-cdf.png")  # fmt: skip


def _prefix(args: argparse.Namespace, targets: list[str], binaries: Binaries,
            results: Results) -> None:  # fmt: skip
    setup = _prefix_setup()
    bench = _bench("prefix", HERE / "sim/fleets/prefix.yaml", None, setup, args, binaries)
    spec = LoadSpec(workload=HERE / "workloads/tenant_prefix.yaml", seed=args.seed,
                    rate=args.prefix_rate, duration_s=args.prefix_duration,
                    plots=False)  # fmt: skip
    results.notes["prefix"] = setup.notes()
    runs = run_scenario("prefix", targets, spec, bench, PREFIX_COUNTERS, results.failures)
    results.prefix += [load_row("prefix", "-", n, s) for n, (s, _) in runs.items()]


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    args.out = args.out.resolve()  # configs name files the peers open from elsewhere
    targets = chosen(args.targets, TARGETS, "targets")
    suites = chosen(args.suites, SUITES, "suites")
    peers = {t for t in targets if t not in ("direct", "gateway")}
    binaries = ensure_all(set() if args.no_install else peers, os.environ)
    args.out.mkdir(parents=True, exist_ok=True)
    meta: dict[str, Any] = {
        "started (UTC)": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M"),
        "command": "python -m loadtests.peers " + " ".join(sys.argv[1:] if argv is None else argv),
        "seed": args.seed,
        "machine": f"{os.cpu_count()} cores; load average 1/5/15 min at start {load_average()}",
        "versions": versions(binaries, peers),
    }
    results = Results()
    plan = OverheadPlan(tuple(int(x) for x in args.levels.split(",")), args.rounds, args.round_s)
    cancel = CancelPlan(trials=args.cancel_trials,
                        phases=tuple(chosen(args.cancel_phases, PHASES, "phases")))  # fmt: skip
    for suite in suites:
        before = load_average()
        if suite == "overhead":
            results.overhead = run_overhead(targets, plan, args.out / "overhead", args.base_port,
                                            binaries, results.failures)  # fmt: skip
        elif suite == "bursty":
            _bursty(args, targets, binaries, results)
        elif suite == "prefix":
            _prefix(args, targets, binaries, results)
        else:
            results.cancel = run_cancellation(targets, cancel, args.out / "cancel",
                                              args.base_port, binaries,
                                              results.failures)  # fmt: skip
        meta[f"load average during {suite}"] = f"before {before}, after {load_average()}"
    meta["finished (UTC)"] = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M")
    path = write(args.out, results, meta)
    print(path.read_text())
    print(f"\nreport: {path}")
    return 0
