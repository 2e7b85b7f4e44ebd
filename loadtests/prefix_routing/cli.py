"""``python -m loadtests.prefix_routing``: prefix-cache hits, spread and TTFT, by routing and
rewriting.

Six runs on the prefix fleet (four L4-sized replicas, ``loadtests/sim/fleets/prefix.yaml``),
each on a freshly started fleet so every run starts with cold caches, same seed:

- ``round_robin``: ``tenant_prefix`` straight to the replicas in turn (issue 6's baseline);
- ``gateway``: ``tenant_prefix`` through the gateway, default scheduling (prefix affinity,
  load, sessions) — issue 6 item 7;
- ``rewrite_off`` / ``rewrite_on``: ``tenant_prefix_volatile`` (a timestamp and request id
  at the head of each system prompt) through the gateway with canonicalisation off, then on
  — issue 7 item 4;
- ``spread_off`` / ``spread_on``: ``tenant_spread`` (8 tenants with their own 800-token
  system prompts, a request now and then) through the gateway with
  ``scheduling.spread_new_prefixes`` off, then on (the default) — issue 22 item 6.

The prefix-cache hit rate is the replicas' own ``vllm:prefix_cache_hits_total`` over
``vllm:prefix_cache_queries_total`` (prompt tokens found cached / prompt tokens), the
busiest replica's share its ``vllm:request_success_total`` over all replicas', read at the
end of each run. Prints a table and writes ``report.md`` and ``summary.json``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loadtests.compare.runs import direct_run, gateway_run
from loadtests.loadgen.fleet import policy_for, write_policy
from loadtests.loadgen.session import LoadSpec
from loadtests.sim.fleet import FleetConfig, load_fleet

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent  # loadtests/
HITS, QUERIES = "vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total"
SERVED = "vllm:request_success_total"
RUNS = ("round_robin", "gateway", "rewrite_off", "rewrite_on", "spread_off", "spread_on")


@dataclass(frozen=True, slots=True)
class Run:
    name: str
    workload: str
    rewrite: bool | None  # None: straight to the replicas
    spread: bool = True  # scheduling.spread_new_prefixes


PLAN = {
    "round_robin": Run("round_robin", "tenant_prefix", None),
    "gateway": Run("gateway", "tenant_prefix", True),
    "rewrite_off": Run("rewrite_off", "tenant_prefix_volatile", False),
    "rewrite_on": Run("rewrite_on", "tenant_prefix_volatile", True),
    "spread_off": Run("spread_off", "tenant_spread", True, spread=False),
    "spread_on": Run("spread_on", "tenant_spread", True),
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m loadtests.prefix_routing", description=__doc__)
    parser.add_argument("--fleet", type=Path, default=ROOT / "sim" / "fleets" / "prefix.yaml")
    parser.add_argument("--runs", default=",".join(RUNS), help="comma-separated, of " + str(RUNS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rate", type=float, help="override the workloads' arrival rate")
    parser.add_argument("--duration", type=float, help="override the workloads' duration (s)")
    parser.add_argument("--gateway-port", type=int, default=8090)
    parser.add_argument("--gateway-workers", type=int, default=1, help="serve --workers")
    parser.add_argument("--startup-timeout", type=float, default=60.0)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "out")
    return parser


def _policy(fleet: FleetConfig, run: Run, path: Path) -> Path:
    policy = policy_for(fleet, max_inflight=128)
    policy["rewrite"] = {"enabled": run.rewrite}
    scheduling = {"spread_new_prefixes": run.spread}
    policy["pools"] = {group.name: {"scheduling": scheduling} for group in fleet.groups}
    write_policy(path, policy)
    return path


def _one(run: Run, fleet: FleetConfig, args: argparse.Namespace) -> dict[str, Any]:
    spec = LoadSpec(
        workload=ROOT / "workloads" / f"{run.workload}.yaml",
        seed=args.seed,
        rate=args.rate,
        duration_s=args.duration,
        plots=False,
    )
    counters = (HITS, QUERIES, SERVED)
    sub = argparse.Namespace(**{**vars(args), "out": args.out})
    if run.rewrite is None:
        sub.out = args.out / run.name
        summary, _ = direct_run(spec, fleet, args.fleet, None, sub, counters)
    else:
        policy = _policy(fleet, run, args.out / f"{run.name}.policy.yaml")
        summary, _ = gateway_run(spec, fleet, args.fleet, policy, sub, counters, name=run.name)
    return summary


def _row(run: Run, summary: dict[str, Any]) -> dict[str, Any]:
    counters = summary["fleet_counters"]
    queries = counters[QUERIES]
    served = [c[SERVED] for c in summary["replica_counters"].values()]
    ttft = summary["ttft_ms"]
    return {
        "run": run.name,
        "workload": run.workload,
        "prefix_hit_rate": counters[HITS] / queries if queries else None,
        "busiest_share": max(served) / sum(served) if sum(served) else None,
        "served_per_replica": served,
        "ttft_p50_ms": ttft["p50"],
        "ttft_p99_ms": ttft["p99"],
        "requests": summary["requests"],
        "error_rate": summary["error_rate"],
        "goodput_rps": summary["goodput_rps"],
    }


def _table(rows: Sequence[dict[str, Any]]) -> str:
    head = (
        "| run | workload | prefix hit rate | busiest replica | TTFT p50 ms | TTFT p99 ms |"
        " requests | errors |"
    )
    lines = [head, "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        hit = "n/a" if r["prefix_hit_rate"] is None else f"{r['prefix_hit_rate']:.1%}"
        busiest = "n/a" if r["busiest_share"] is None else f"{r['busiest_share']:.0%}"
        lines.append(
            f"| {r['run']} | {r['workload']} | {hit} | {busiest} | {r['ttft_p50_ms']:.0f} | "
            f"{r['ttft_p99_ms']:.0f} | {r['requests']} | {r['error_rate']:.1%} |"
        )
    return "\n".join(lines)


def _ratios(rows: dict[str, dict[str, Any]]) -> list[str]:
    pairs = (("round_robin", "gateway", "issue 6"), ("rewrite_off", "rewrite_on", "issue 7"))
    out = []
    for before, after, issue in pairs:
        if before in rows and after in rows:
            a, b = rows[before], rows[after]
            out.append(
                f"{issue}: {after} vs {before}: TTFT p50 {a['ttft_p50_ms'] / b['ttft_p50_ms']:.2f}x"
                f" lower, p99 {a['ttft_p99_ms'] / b['ttft_p99_ms']:.2f}x lower"
            )
    off, on = rows.get("spread_off"), rows.get("spread_on")
    if off and on and off["busiest_share"] is not None and on["busiest_share"] is not None:
        out.append(
            f"issue 22: busiest replica {off['busiest_share']:.0%} of requests with "
            f"spread_new_prefixes off, {on['busiest_share']:.0%} on (25% = even over 4)"
        )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    fleet = load_fleet(args.fleet)
    names = [n.strip() for n in args.runs.split(",") if n.strip()]
    unknown = [n for n in names if n not in PLAN]
    if unknown:
        raise SystemExit(f"unknown runs {unknown}; choose from {RUNS}")
    rows: dict[str, dict[str, Any]] = {}
    for name in names:
        rows[name] = _row(PLAN[name], _one(PLAN[name], fleet, args))
        print(f"{name}: {json.dumps(rows[name])}", flush=True)
    table = _table(list(rows.values()))
    notes = _ratios(rows)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "summary.json").write_text(json.dumps(rows, indent=2))
    (args.out / "report.md").write_text(table + "\n\n" + "\n".join(f"- {n}" for n in notes) + "\n")
    print(table)
    print("\n".join(notes))
    return 0
