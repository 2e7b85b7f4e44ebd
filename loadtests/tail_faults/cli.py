"""``python -m loadtests.tail_faults``: stalls and deaths after dispatch (issue 32, item 4).

The same planned requests go to every target (``loadtests.tail_faults.targets``), each run
on a fresh simulated fleet injecting the scenario's faults (``loadtests.tail_faults.
scenarios``): ``nofault`` (the baseline), ``stalls`` (each replica stalls 4% of its requests
2.5 s before the first token, 8 req/s, far under capacity), ``deaths`` (each replica cuts
20% of its streams after 10 tokens) and ``saturation`` (the SLO benchmark's bursts at 3x
capacity, with stalls; by default only direct and the gateway on and off). Per target: TTFT
p50/p99 against the no-fault run, upstream requests and the extra ones, streams intact
(text equal to the uninterrupted answer), streams that look complete and are not, error
events, broken streams (``loadtests.tail_faults.figures``); issue 32's targets are checked
(``loadtests.tail_faults.checks``). A Markdown report and JSON go to ``--results``
(``<name>.md``/``.json``), every run's records to ``--out``. ``--quick`` shrinks the
scenarios and leaves the peers out (a few minutes); a flag given explicitly wins over the
mode. Ports not given are picked free.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from loadtests.kit.cli_words import chosen, load_average, sized
from loadtests.kit.ports import free_ports
from loadtests.peers.fleets import front_for, write_fleet
from loadtests.peers.install import Binaries, ensure_all, versions
from loadtests.peers.load_suite import Bench
from loadtests.peers.targets import LAUNCH_ERRORS
from loadtests.sim.fleet import group_profile, load_fleet
from loadtests.slo.bench import default_policy
from loadtests.slo.capacity import engine_tokens
from loadtests.slo.rows import row_metrics
from loadtests.tail_faults import scenarios as sc_mod
from loadtests.tail_faults.checks import all_checks
from loadtests.tail_faults.figures import expected_text, run_figures
from loadtests.tail_faults.report import write
from loadtests.tail_faults.run import run_target
from loadtests.tail_faults.scenarios import FULL, QUICK, SCENARIOS, Scenario
from loadtests.tail_faults.targets import (
    DEFAULT_TARGETS,
    PEERS,
    QUICK_TARGETS,
    RECOVERY_OFF,
    TARGETS,
    notes,
    policies,
    policy_problem,
    setup,
)

ROOT = Path(__file__).resolve().parents[2]
STARTUP_S = 6.0  # a run's start-up and stop, roughly (LiteLLM: ~25 s more)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m loadtests.tail_faults", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--quick", action="store_true", help="small scenarios (minutes)")
    p.add_argument("--name", help="results file stem (default: full or quick)")
    p.add_argument("--scenarios", default=",".join(SCENARIOS), help=f"of {SCENARIOS}")
    p.add_argument("--targets", help=f"of {TARGETS} (default: {','.join(DEFAULT_TARGETS)}; "
                   f"quick: {','.join(QUICK_TARGETS)})")  # fmt: skip
    p.add_argument("--saturation-targets", default="direct,gateway,gateway-off")
    p.add_argument("--rate", type=float, help="req/s of nofault and stalls")
    p.add_argument("--duration", type=float, dest="duration_s", help="s of their arrivals")
    p.add_argument("--stall-rate", type=float)
    p.add_argument("--stall-s", type=float)
    p.add_argument("--deaths-requests", type=int)
    p.add_argument("--deaths-rate", type=float, help="req/s of the deaths scenario")
    p.add_argument("--death-rate", type=float)
    p.add_argument("--death-after", type=int)
    p.add_argument("--multiple", type=float, help="saturation: bursts x capacity")
    p.add_argument("--saturation-duration", type=float, dest="saturation_s")
    p.add_argument("--client-timeout", type=float, dest="client_timeout_s")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--base-port", type=int, help="targets listen above it (default: free)")
    p.add_argument("--fleet-port", type=int,
                   help="the 3-replica fleet's first (default: free)")  # fmt: skip
    p.add_argument("--slo-port-offset", type=int,
                   help="added to slo.yaml's ports for the saturation fleet (default: to free "
                   "ones)")  # fmt: skip
    p.add_argument("--out", type=Path, default=ROOT / "loadtests/tail_faults/results/out")
    p.add_argument("--results", type=Path, default=ROOT / "loadtests/tail_faults/results")
    p.add_argument("--no-install", action="store_true", help="fail instead of installing")
    p.add_argument("--startup-timeout", type=float, default=120.0)
    p.add_argument("--plan-only", action="store_true", help="print the plan and stop")
    return p


def _free_ports(args: argparse.Namespace) -> None:
    """Ports not given are picked free (``loadtests.kit.ports``), from one block so they
    cannot overlap: the targets' (``port_of``: ``base + 1 + index``), then the 3-replica
    fleet's, then slo.yaml's (moved by the offset)."""
    groups = load_fleet(sc_mod.SLO_FLEET).groups
    low = min(g.base_port for g in groups)
    span = max(g.base_port + g.replicas for g in groups) - low
    first = free_ports(len(TARGETS) + 1 + 3 + span)
    if args.base_port is None:
        args.base_port = first
    if args.fleet_port is None:
        args.fleet_port = first + len(TARGETS) + 1
    if args.slo_port_offset is None:
        args.slo_port_offset = first + len(TARGETS) + 1 + 3 - low


def _commit() -> str:
    try:
        done = subprocess.run(["git", "-C", str(ROOT), "log", "-1", "--format=%h %s"],
                              capture_output=True, text=True, timeout=10, check=True)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return "unknown (not a git checkout)"
    return done.stdout.strip()


def _targets_of(sc: Scenario, targets: list[str], saturation: list[str]) -> list[str]:
    return saturation if sc.name == "saturation" else targets


def _row(sc: Scenario, name: str, bench: Bench, texts: dict[str, str], out: Path,
         timeout_s: float, rows: dict[str, dict[str, Any]]) -> dict[str, Any]:  # fmt: skip
    """One run's figures, or its status when it could not run."""
    problem = policy_problem(texts[name]) if name in texts else None
    if problem:
        return {"status": f"policy refused by this gateway (not run): {problem}"}
    try:
        result = run_target(name, sc, bench, texts, out, timeout_s)
    except LAUNCH_ERRORS as exc:
        return {"status": f"did not start: {exc}"}
    stop = group_profile(sc.fleet.groups[0]).natural_stop
    expected = {r.index: expected_text(r, stop) for r in sc.plan}
    row = run_figures(result.records, expected, result.fleet.get("sim_requests_total"),
                      timeout_s)  # fmt: skip
    row["fleet"] = result.fleet
    base = rows.get(sc.baseline or "", {}).get(name, {})
    if base.get("ttft_p99_ms") and row["ttft_p99_ms"] is not None:
        row["p99_vs_baseline"] = row["ttft_p99_ms"] / base["ttft_p99_ms"]
    if sc.name == "saturation":
        tokens = {r.index: engine_tokens(r, stop).prompt_tokens for r in sc.plan}
        admission = row_metrics(result.records, tokens, multiple=sc.multiple,
                                window_s=sc.window_s, metrics_text=result.metrics_text)  # fmt: skip
        row.update(goodput=admission["goodput"], shed=admission["shed"],
                   admitted_p99_ms=admission["ttft_p99_ms"],
                   timeouts=admission["timeouts"])  # fmt: skip
    return row


def _progress(sc: Scenario, name: str, row: dict[str, Any]) -> None:
    if row.get("status"):
        sys.stderr.write(f"[{sc.name}] {name}: {row['status']}\n")
        return
    sys.stderr.write(
        f"[{sc.name}] {name}: TTFT p50 {row['ttft_p50_ms']} p99 {row['ttft_p99_ms']} ms, intact "
        f"{row['intact']}/{row['requests']}, looks complete but not {row['looks_complete_not']}, "
        f"error events {row['error_event']}, broken {row['broken']}, upstream "
        f"{row['upstream_requests']} (extra {row['extra_upstream']}), errors {row['errors']}\n"
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    args.out = args.out.resolve()
    sizes = sized(args, QUICK, FULL)
    _free_ports(args)
    names = chosen(args.scenarios, SCENARIOS, "scenarios")
    asked = args.targets or ",".join(QUICK_TARGETS if args.quick else DEFAULT_TARGETS)
    targets = chosen(asked, TARGETS, "targets")
    saturation = chosen(args.saturation_targets, TARGETS, "saturation targets")
    scenarios = sc_mod.build(names, sizes, args.seed, args.fleet_port, args.slo_port_offset)
    runs = [(sc, t) for sc in scenarios for t in _targets_of(sc, targets, saturation)]
    seconds = sum(sc.window_s + STARTUP_S + 10 for sc, _ in runs)
    print(f"planned: {len(runs)} runs, about {seconds / 60:.0f} min", flush=True)
    for sc in scenarios:
        print(f"  {sc.name}: {sc.note}", flush=True)
    if args.plan_only:
        return 0
    peers = {t for _, t in runs if t in PEERS}
    binaries: Binaries = ensure_all(set() if args.no_install else peers, os.environ)
    meta: dict[str, Any] = {
        "command": "python -m loadtests.tail_faults "
        + " ".join(sys.argv[1:] if argv is None else argv),
        "started (UTC)": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M"),
        "machine": f"{os.cpu_count()} cores; load average 1/5/15 min at start {load_average()}",
        "code": _commit(),
        "seed": args.seed,
        "client timeout": f"{sizes.client_timeout_s:g} s to the first token",
        "recovery off (gateway-off)": f"every pool: {RECOVERY_OFF}",
        "peers": versions(binaries, peers),
    }
    rows: dict[str, dict[str, dict[str, Any]]] = {}
    ran = {t: n for t, n in notes().items() if any(t == r for _, r in runs)}
    name = args.name or ("quick" if args.quick else "full")
    for sc in scenarios:
        out = args.out / sc.name
        fleet_path = write_fleet(sc.fleet, out / "fleet.yaml")
        texts = policies(sc.fleet)
        bench = Bench(sc.fleet, fleet_path, front_for(sc.fleet, default_policy(sc.fleet)),
                      setup(), out, args.base_port, binaries, args.startup_timeout)  # fmt: skip
        rows[sc.name] = {}
        for target in _targets_of(sc, targets, saturation):
            row = _row(sc, target, bench, texts, out / target, sizes.client_timeout_s, rows)
            rows[sc.name][target] = row
            _progress(sc, target, row)
        write(args.results, name, scenarios, rows, all_checks(rows), meta, ran)
    meta["finished (UTC)"] = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M")
    meta["load average at the end"] = load_average()
    path = write(args.results, name, scenarios, rows, all_checks(rows), meta, ran)
    print(path.read_text())
    print(f"results: {path}")
    return 0
