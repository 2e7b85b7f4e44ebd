"""``python -m loadtests.overhead``: what the gateway adds over going direct, and what it costs
next to two native proxies, in one run on one fake upstream (``lineup.py``):

1. CPU per streamed token (``--cpu-streams`` streams of ``--cpu-tokens`` tokens
   ``--cpu-itl-ms`` apart), gateway vs nginx (vllm-router too), from the processes' own CPU
   time;
2. TTFT p50/p99 at each of ``--levels`` (closed-loop streaming clients; 20 ms to the first
   token, 20 tokens 5 ms apart): direct, gateway, nginx, vllm-router;
3. the most requests/s each target carries at ``--capacity-c`` with the fake answering at once,
   and each proxy's CPU time per request meanwhile.

It then checks issue 33's targets: CPU per token at most 2.0x nginx's; TTFT p50 at c=64
within 1.15x of direct and at most nginx's ratio; max requests/s at least vllm-router's;
with ``--floor``, the bare relay against the same targets too (what a relay on the gateway's
server stack meets with no stage at all).
Peers (``--peers``, default nginx and vllm-router) are installed as ``loadtests.peers``
installs them (``--no-install``: skip missing ones). The load average is printed before and
after: the figures are ratios measured side by side, the absolute ones move with the machine.

Parameters: ``--levels``, ``--rounds`` and ``--round-s`` (per target and level),
``--cpu-rounds``, ``--cpu-waves`` (requests per stream and round), ``--capacity-c``,
``--port`` (the fake's; targets take the next ones), ``--gateway-workers`` (the gateway's
``serve --workers``; default: the gateway's own default, the cores available, as nginx runs
``worker_processes auto`` and vllm-router a thread per core; ``1`` compares one process),
``--floor`` (also ``floor``, a bare relay on the gateway's server stack, ``relay_floor.py``:
the gateway's own work per request is its CPU beyond that relay's), ``--redis-url``
(cluster admission through that Redis: a
lease per request), ``--skip`` (of cpu, ttft, capacity), ``--json FILE``, ``--profile FILE``
(py-spy's view of the gateway during the CPU rounds; with ``--profile-phase capacity``, during
the capacity rounds), ``--baseline DIR`` (another checkout's
gateway beside this one: an A/B in one run).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from gateway.commands.workers import default_workers
from loadtests.overhead.cpu import stream_payload
from loadtests.overhead.lineup import capacity_rows, cpu_rows, targets_up, ttft_rows
from loadtests.overhead.measure import gateway_policy
from loadtests.peers.install import Binaries, ensure_all, peer_home, venv_binary

PEERS = ("nginx", "vllm-router")
CPU_RATIO_MAX = 2.0  # gateway's CPU per token over nginx's
TTFT_RATIO_MAX = 1.15  # gateway's TTFT p50 over direct's at c=64


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m loadtests.overhead", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--peers", default=",".join(PEERS), help="of nginx, vllm-router; '' for none")
    p.add_argument("--no-install", action="store_true", help="skip peers that are missing")
    p.add_argument("--floor", action="store_true",
                   help="also a bare relay on the gateway's stack (relay_floor.py)")  # fmt: skip
    p.add_argument("--levels", default="1,16,64")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--round-s", type=float, default=4.0)
    p.add_argument("--cpu-rounds", type=int, default=3)
    p.add_argument("--cpu-streams", type=int, default=48)
    p.add_argument("--cpu-tokens", type=int, default=100)
    p.add_argument("--cpu-itl-ms", type=float, default=10.0)
    p.add_argument("--cpu-waves", type=int, default=3, help="requests per stream and round")
    p.add_argument("--capacity-c", type=int, default=64, help="concurrency for max req/s")
    p.add_argument("--port", type=int, default=9750)
    p.add_argument("--skip", default="", help="phases to skip, of cpu, ttft, capacity")
    p.add_argument("--json", help="also write every row to this JSON file")
    p.add_argument("--baseline", type=Path, help="another checkout of the gateway, measured "
                   "beside this one as target 'baseline' (A/B)")  # fmt: skip
    p.add_argument("--profile", type=Path, help="py-spy profile of the gateway's CPU rounds: "
                   ".svg flame graph, .json speedscope, .txt collapsed stacks")  # fmt: skip
    p.add_argument("--profile-phase", choices=("cpu", "capacity"), default="cpu",
                   help="the phase --profile records (default cpu)")  # fmt: skip
    p.add_argument(
        "--gateway-workers",
        type=int,
        default=default_workers(),
        help="the gateway's serve --workers (default: its own, the cores available)",
    )
    p.add_argument("--redis-url", help="cluster admission through this Redis")
    return p


def _binaries(peers: list[str], no_install: bool) -> tuple[Binaries, list[str]]:
    if not no_install:
        return ensure_all(set(peers)), peers
    home = peer_home(os.environ)
    found = Binaries(venv_binary(home, "litellm", "litellm"),
                     venv_binary(home, "vllm-router", "vllm-router"),
                     Path("/usr/sbin/nginx"))  # fmt: skip
    present = {"nginx": found.nginx.exists(), "vllm-router": found.vllm_router.exists()}
    return found, [p for p in peers if present.get(p, False)]


def _ttft_table(rows: list[dict[str, Any]]) -> str:
    lines = ["| c | target | TTFT p50 / p99 ms | p50 / p99 vs direct | req/s | errors |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    for r in rows:
        ratio = f"{r.get('p50_ratio', '-')}x / {r.get('p99_ratio', '-')}x"
        lines.append(f"| {r['concurrency']} | {r['target']} | {r['ttft_p50_ms']} / "
                     f"{r['ttft_p99_ms']} | {ratio} | {r['rps']} | {r['errors']} |")  # fmt: skip
    return "\n".join(lines)


def _cpu_table(rows: list[dict[str, Any]]) -> str:
    lines = ["| target | CPU us per token | per round | tokens | errors |",
             "|---|---|---|---|---|"]  # fmt: skip
    for r in rows:
        rounds = ", ".join(str(x) for x in r["rounds_us_per_token"])
        lines.append(f"| {r['target']} | {r['cpu_us_per_token']} | {rounds} | {r['tokens']} "
                     f"| {r['errors']} |")  # fmt: skip
    return "\n".join(lines)


def _by(rows: list[dict[str, Any]], key: str, **match: Any) -> dict[str, Any]:
    return {r["target"]: r[key] for r in rows if all(r.get(k) == v for k, v in match.items())}


def checks(results: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Issue 33's targets against the rows (a line each; only those the run can check): the
    gateway's, then the bare relay's (``--floor``) against the same targets, which says how
    much of a target a relay on the gateway's server stack meets with no stage at all."""
    return [*_target_checks(results, "gateway"), *_target_checks(results, "floor")]


def _target_checks(results: dict[str, list[dict[str, Any]]], target: str) -> list[str]:
    """Issue 33's targets for ``target``'s rows (none when it did not run)."""
    out = []
    cpu = _by(results.get("cpu", []), "cpu_us_per_token")
    if target in cpu and "nginx" in cpu:
        ratio = cpu[target] / cpu["nginx"]
        verdict = "met" if ratio <= CPU_RATIO_MAX else "MISSED"
        out.append(f"CPU per token: {target} {cpu[target]} us, nginx {cpu['nginx']} us: "
                   f"{ratio:.2f}x (target <= {CPU_RATIO_MAX}x): {verdict}")  # fmt: skip
    ttft = _by(results.get("ttft", []), "p50_ratio", concurrency=64)
    if target in ttft:
        ok = ttft[target] <= TTFT_RATIO_MAX and ttft[target] <= ttft.get("nginx", 99)
        nginx = f", nginx {ttft['nginx']}x" if "nginx" in ttft else ""
        verdict = "met" if ok else "MISSED"
        out.append(f"TTFT p50 at c=64 vs direct: {target} {ttft[target]}x{nginx} (target "
                   f"<= {TTFT_RATIO_MAX}x and <= nginx's): {verdict}")  # fmt: skip
    rps = _by(results.get("capacity", []), "max_rps")
    if target in rps and "vllm-router" in rps:
        ok = rps[target] >= rps["vllm-router"]
        out.append(f"max req/s: {target} {rps[target]}, vllm-router {rps['vllm-router']} "
                   f"(target >=): {'met' if ok else 'MISSED'}")  # fmt: skip
    return out


def _over_floor(rows: list[dict[str, Any]]) -> str:
    """The gateway's CPU per request beyond the bare relay's (its own work), when both ran."""
    cpu = {r["target"]: r.get("cpu_us_per_request") for r in rows}
    gateway, floor = cpu.get("gateway"), cpu.get("floor")
    if gateway is None or floor is None:
        return ""
    return (f"gateway's own work per request (its CPU beyond the bare relay's): "
            f"{gateway - floor:.1f} us of {gateway:.1f} ({floor:.1f} the relay)\n")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    peers = [p for p in args.peers.split(",") if p]
    unknown = set(peers) - set(PEERS)
    if unknown:
        sys.exit(f"unknown peers: {sorted(unknown)}; choose from {PEERS}")
    skip = {s for s in args.skip.split(",") if s}
    binaries, peers = _binaries(peers, args.no_install)
    policy = gateway_policy(f"http://127.0.0.1:{args.port}")
    if args.redis_url:
        policy += f"cluster: {{enabled: true, redis_url: '{args.redis_url}'}}\n"
    load_before = os.getloadavg()
    failures: dict[str, str] = {}
    results: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        names = ["direct", "gateway", *peers]
        with targets_up(names, args.port, policy, Path(tmp), binaries, failures,
                        args.baseline, args.gateway_workers, args.floor) as targets:  # fmt: skip
            if "cpu" not in skip:
                payload = stream_payload(args.cpu_tokens, args.cpu_itl_ms)
                profile = args.profile if args.profile_phase == "cpu" else None
                results["cpu"] = cpu_rows(targets, args.cpu_rounds, args.cpu_streams,
                                          args.cpu_waves, payload, profile)  # fmt: skip
            if "ttft" not in skip:
                levels = [int(x) for x in args.levels.split(",")]
                results["ttft"] = ttft_rows(targets, levels, args.rounds, args.round_s)
            if "capacity" not in skip:
                profile = args.profile if args.profile_phase == "capacity" else None
                results["capacity"] = capacity_rows(targets, args.capacity_c, args.rounds,
                                                    args.round_s, profile)  # fmt: skip
    load_after = os.getloadavg()
    for name, why in failures.items():
        print(f"{name} did not start: {why}")
    if "cpu" in results:
        print(f"CPU per streamed token ({args.cpu_streams} streams of {args.cpu_tokens} tokens "
              f"{args.cpu_itl_ms:g} ms apart):\n{_cpu_table(results['cpu'])}\n")  # fmt: skip
    if "ttft" in results:
        print(f"TTFT (closed-loop streams):\n{_ttft_table(results['ttft'])}\n")
    if "capacity" in results:
        line = ", ".join(f"{r['target']} {r['max_rps']} ({r['errors']} errors)"
                         for r in results["capacity"])  # fmt: skip
        print(f"max requests/s (zero-delay upstream, c={args.capacity_c}): {line}")
        line = ", ".join(f"{r['target']} {r['cpu_us_per_request']}"
                         for r in results["capacity"] if "cpu_us_per_request" in r)  # fmt: skip
        print(f"CPU us per request meanwhile: {line}\n")
        print(_over_floor(results["capacity"]))
    for line in checks(results):
        print(line)
    print(f"gateway workers: {args.gateway_workers}")
    print(f"load average (1/5/15 min) before {load_before[0]:.2f}/{load_before[1]:.2f}/"
          f"{load_before[2]:.2f}, after {load_after[0]:.2f}/{load_after[1]:.2f}/"
          f"{load_after[2]:.2f}")  # fmt: skip
    if args.json:
        record = {**results, "failures": failures, "gateway_workers": args.gateway_workers}
        Path(args.json).write_text(json.dumps(record, indent=2))
    return 0
