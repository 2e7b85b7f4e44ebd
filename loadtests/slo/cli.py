"""``python -m loadtests.slo``: the SLO-first admission benchmark (issues 18 and 31).

On the simulated fleet ``loadtests/sim/fleets/slo.yaml`` (two 4-slot engines), the same
arrivals go to every target (``loadtests.slo.bench.TARGETS``), each run on a fresh fleet and
target; a Markdown table per scenario and the issue's targets, met or not, are printed and
written to ``--results`` (``<name>.md``, ``<name>.json``); each run's records go to ``--out``.

Scenarios (``--scenarios``, ``loadtests.slo.plans``): ``bursty`` (the straggler workload,
bursts at each of ``--multiples`` times capacity), ``steady`` (Poisson at
``--steady-multiple``, clients honour Retry-After), ``cold`` (``--cold-requests`` at once
after ``--cold-idle`` s idle), ``azure`` (the head of each of ``--traces``, time-scaled to
each of ``--azure-multiples``; read from ``--data``, by default ``../shared/datasets`` next to
the repository; a missing file is reported and its scenario skipped); ``ramp`` and ``ramp8``
(closed-loop users at ``--ramp-levels`` / ``--ramp8-levels`` onto one engine with 256 and
with 8 slots, ``loadtests.slo.ramps``); ``shift`` (``--shift-levels``: long prompts, then
short ones, onto one 64-slot engine); ``replicas`` (bursty 3x for ``--replicas-duration``
s to one gateway and to two gateway processes, ``loadtests.slo.replicas``; with
``--replicas-cluster`` also two sharing Redis). ``refuse-all`` runs on the loads where
refusals are expected (above 1x, the cold burst).

Capacity is computed from the fleet's profile and each scenario's own requests
(``loadtests.slo.capacity``). ``--speed`` runs the simulated engines that many times faster
than real time: capacity scales with it, objectives stay wall-clock, so it models faster
hardware (the fleet file's own speed, 2, is the calibrated CPU engine twice as fast).
``--quick`` shrinks every scenario (``QUICK``) to finish in minutes; a flag given explicitly
wins over the mode. The planned duration is printed before anything starts.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from loadtests.kit.cli_words import chosen, load_average, sized
from loadtests.loadgen.workload import load_workload
from loadtests.peers.fleets import front_for, rename_model, shift_fleet, write_fleet
from loadtests.peers.install import Binaries, ensure_all, versions
from loadtests.peers.load_suite import Bench
from loadtests.sim.fleet import FleetConfig, group_profile, load_fleet
from loadtests.slo import azure
from loadtests.slo.bench import (
    SERVED_MODEL,
    TARGETS,
    Arena,
    default_policy,
    overload_policy,
    peer_setup,
    target_notes,
)
from loadtests.slo.objective import BASE_OBJECTIVE_S
from loadtests.slo.program import (
    FULL,
    QUICK,
    Mix,
    Program,
    Sizes,
    add_azure,
    add_bursty,
    add_cold,
    add_ramp,
    add_replicas,
    add_steady,
    mix_capacity,
    ramp_targets,
)
from loadtests.slo.refuser import NAME as REFUSER
from loadtests.slo.report import write
from loadtests.slo.runs import Knobs, run_open, run_ramps
from loadtests.slo.saturation import check_capacity

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ("bursty", "steady", "cold", "azure", "ramp", "ramp8", "shift", "replicas")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m loadtests.slo", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--quick", action="store_true", help="every scenario small (minutes)")
    p.add_argument("--name", help="results file stem (default: full or quick)")
    p.add_argument("--targets", default=",".join(TARGETS), help=f"of {TARGETS}")
    p.add_argument("--scenarios", default=",".join(SCENARIOS), help=f"of {SCENARIOS}")
    p.add_argument("--multiples", help=f"bursty loads x capacity (full: {FULL.multiples})")
    p.add_argument("--bursty-duration", type=float, dest="bursty_s", help="s of arrivals")
    p.add_argument("--steady-multiple", type=float, default=2.0)
    p.add_argument("--steady-duration", type=float, dest="steady_s", help="s of arrivals")
    p.add_argument("--retry-cap", type=float, default=60.0,
                   help="longest Retry-After a client waits out (s)")  # fmt: skip
    p.add_argument("--cold-requests", type=int, help=f"full: {FULL.cold_requests}")
    p.add_argument("--cold-idle", type=float, dest="cold_idle_s", help="s idle before the burst")
    p.add_argument("--cold-warmup", type=float, dest="cold_warmup_s",
                   help="s of traffic at 0.5x before the idle time (0: none)")  # fmt: skip
    p.add_argument("--traces", default=",".join(azure.TRACES))
    p.add_argument("--azure-multiples", help=f"full: {FULL.azure_multiples}")
    p.add_argument("--azure-requests", type=int, help="first N requests of each trace")
    p.add_argument("--azure-minutes", type=float, help="first N minutes of each trace")
    p.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "datasets")
    p.add_argument("--client-timeout", type=float, dest="client_timeout_s",
                   help="s a client waits for the first token (full: 30)")  # fmt: skip
    p.add_argument("--speed", type=float, help="simulated seconds per wall second")
    p.add_argument("--nginx-cap", type=int, help="default: slots + capacity x objective")
    p.add_argument("--fleet", type=Path, default=ROOT / "loadtests/sim/fleets/slo.yaml")
    p.add_argument("--workload", type=Path,
                   default=ROOT / "loadtests/workloads/bursty_straggler.yaml")  # fmt: skip
    p.add_argument("--overload-policy", type=Path,
                   default=ROOT / "policies/bench-overload.yaml")  # fmt: skip
    p.add_argument("--gateway-workers", type=int, default=1,
                   help="serve --workers of the gateway targets")  # fmt: skip
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--base-port", type=int, default=19870)
    p.add_argument("--fleet-port-offset", type=int, default=10000)
    p.add_argument("--out", type=Path, default=ROOT / "loadtests/slo/results/out")
    p.add_argument("--results", type=Path, default=ROOT / "loadtests/slo/results")
    p.add_argument("--no-install", action="store_true", help="fail instead of installing")
    p.add_argument("--startup-timeout", type=float, default=120.0)
    p.add_argument("--capacity-check", type=float, dest="capacity_check_s",
                   help=f"s of direct at 2x to measure capacity; 0: skip "
                   f"(full: {FULL.capacity_check_s:g})")  # fmt: skip
    p.add_argument("--ramp-levels", dest="ramp_levels",
                   help=f"users:requests,... (full: {FULL.ramp_levels})")  # fmt: skip
    p.add_argument("--ramp8-levels", dest="ramp8_levels",
                   help=f"users:requests,... (full: {FULL.ramp8_levels})")  # fmt: skip
    p.add_argument("--shift-levels", dest="shift_levels",
                   help=f"users:requests[@tokens],... (full: {FULL.shift_levels})")  # fmt: skip
    p.add_argument("--refusal-pause-cap", type=float, default=1.0,
                   help="ramps: longest Retry-After a refused user waits out (s)")  # fmt: skip
    p.add_argument("--replicas-duration", type=float, dest="replicas_s",
                   help="s of bursty 3x arrivals for the replicas row")  # fmt: skip
    p.add_argument(
        "--replicas-cluster",
        action="store_true",
        help="replicas row: also two gateways with cluster admission (redis-server)",
    )
    p.add_argument("--plan-only", action="store_true", help="print the plan and stop")
    return p


def _fleet(args: argparse.Namespace) -> tuple[FleetConfig, dict[str, Any]]:
    fleet = shift_fleet(load_fleet(args.fleet), args.fleet_port_offset)
    if args.speed is not None:
        fleet = fleet.model_copy(update={"speed": args.speed})
    fleet, _ = rename_model(fleet, default_policy(fleet), SERVED_MODEL)
    return fleet, default_policy(fleet)  # written after the rename: it maps the served name


def _commit() -> str:
    """The checkout's commit (the gateway measured), or why it is unknown."""
    try:
        done = subprocess.run(["git", "-C", str(ROOT), "log", "-1", "--format=%h %s"],
                              capture_output=True, text=True, timeout=10, check=True)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return "unknown (not a git checkout)"
    return done.stdout.strip()


def _program(args: argparse.Namespace, sizes: Sizes, fleet: FleetConfig, mix: Mix) -> Program:
    names = chosen(args.scenarios, SCENARIOS, "scenarios")
    program = Program()
    for name, add in (("bursty", add_bursty), ("steady", add_steady), ("cold", add_cold)):
        if name in names:
            add(program, mix, sizes)
    if "azure" in names:
        for trace in chosen(args.traces, azure.TRACES, "traces"):
            add_azure(program, fleet, sizes, trace, args.data, args.azure_minutes, args.seed,
                      SERVED_MODEL)  # fmt: skip
    ramps = (("ramp", sizes.ramp_levels), ("ramp8", sizes.ramp8_levels),
             ("shift", sizes.shift_levels))  # fmt: skip
    for name, levels in ramps:
        if name in names:
            add_ramp(program, name, levels, args.seed, SERVED_MODEL)
    if "replicas" in names:
        add_replicas(program, mix, sizes)
        program.replicas_cluster = args.replicas_cluster
    return program


def _announce(program: Program, targets: list[str], sizes: Sizes) -> None:
    loads = program.runs(targets)
    runs = sum(len(names) for _, _, names in loads)
    runs += len(program.ramps) * len(ramp_targets(targets))
    arrivals = sum((sc.window_s + sc.idle_s) * len(names) for _, sc, names in loads)
    total = program.seconds(targets, sizes.client_timeout_s) + 3 * sizes.capacity_check_s
    print(f"planned: {len(loads)} loads and {len(program.ramps)} ramps = {runs} runs; "
          f"arrivals {arrivals / 60:.1f} min; at most ~{total / 60:.0f} min with start-ups, "
          f"the capacity check and each run's wait for its last answers (client timeout "
          f"{sizes.client_timeout_s:g} s)", flush=True)  # fmt: skip
    for section in program.sections:
        print(f"{section.title}:\n" + "".join(f"  - {n}\n" for n in section.notes), end="")


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    args.out = args.out.resolve()  # peers' configs name files they open from elsewhere
    sizes = sized(args, QUICK, FULL)
    targets = chosen(args.targets, TARGETS, "targets")
    fleet, policy = _fleet(args)
    workload = load_workload(args.workload)
    mix = Mix(workload, mix_capacity(fleet, workload, args.seed), args.seed, SERVED_MODEL,
              args.steady_multiple, args.retry_cap)  # fmt: skip
    cap = mix.capacity
    nginx_cap = args.nginx_cap or round(cap.slots + cap.rps * BASE_OBJECTIVE_S)
    program = _program(args, sizes, fleet, mix)
    _announce(program, targets, sizes)
    if args.plan_only:
        return 0
    peers = {t for t in targets if t in ("litellm", "vllm-router", "nginx")}
    if REFUSER in targets:
        peers.add("nginx")  # the refuse-everything reference is an nginx
    binaries: Binaries = ensure_all(set() if args.no_install else peers, os.environ)
    setup = peer_setup(nginx_cap)
    overload = overload_policy(yaml.safe_load(args.overload_policy.read_text()), fleet)
    front = replace(front_for(fleet, policy), gateway_workers=args.gateway_workers)
    bench = Bench(fleet, write_fleet(fleet, args.out / "fleet.yaml"), front,
                  setup, args.out, args.base_port, binaries, args.startup_timeout)  # fmt: skip
    arena = Arena(bench, yaml.safe_dump(overload, sort_keys=False))
    meta: dict[str, Any] = {
        "command": "python -m loadtests.slo " + " ".join(sys.argv[1:] if argv is None else argv),
        "started (UTC)": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M"),
        "machine": f"{os.cpu_count()} cores; load average 1/5/15 min at start {load_average()}",
        "fleet": f"{args.fleet.name}, speed {fleet.speed:g}, {cap.replicas} replicas, "
                 f"{cap.slots} slots in all",
        "code": _commit(),
        "seed": args.seed,
        "gateway workers": args.gateway_workers,
        "client timeout": f"{sizes.client_timeout_s:g} s to the first token",
        "nginx cap": f"{nginx_cap} in flight" + ("" if args.nginx_cap else
                     f" (slots + capacity x {BASE_OBJECTIVE_S:g} s: {cap.slots} + "
                     f"{cap.rps:.2f} x {BASE_OBJECTIVE_S:g}, rounded)"),
        "peers": versions(binaries, peers),
    }  # fmt: skip
    if sizes.capacity_check_s > 0:
        check = check_capacity(arena, mix, sizes.capacity_check_s, args.out / "capacity-check")
        meta["capacity of the straggler mix"] = check
        print(f"capacity check: {check}", flush=True)
    notes = target_notes(setup, args.overload_policy)
    name = args.name or ("quick" if args.quick else "full")
    shown = [*targets, *(t for t in ("gateway-x2", "gateway-x2-cluster")
                         if any(t in names for _, _, names in program.runs(targets)))]  # fmt: skip

    def save() -> Path:
        return write(args.results, name, program.sections, meta, {t: notes[t] for t in shown})

    meta["finished (UTC)"] = "- (running; saved after each load)"
    knobs = Knobs(args.out, sizes.client_timeout_s, args.retry_cap, args.refusal_pause_cap,
                  args.fleet_port_offset)  # fmt: skip
    run_open(program, targets, arena, knobs, group_profile(fleet.groups[0]).natural_stop, save)
    run_ramps(program, targets, arena, knobs, save)
    meta["finished (UTC)"] = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M")
    meta["load average at the end"] = load_average()
    path = save()
    print(path.read_text())
    print(f"results: {path}")
    return 0
