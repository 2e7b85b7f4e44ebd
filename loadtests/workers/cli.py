"""``python -m loadtests.workers``: relayed tokens per second of ``serve --workers N``, side by
side for each N asked (default 1 and 2), with the gateway as the bottleneck.

Method: nginx returns one canned stream of ``--tokens`` chat events from memory for every
request (``canned.py``), and wrk (one thread, C) keeps ``--connections`` streaming requests
going; the gateways (one per N, all started first and left running, so each round meets the
same machine) relay them. Rounds of ``--round-s`` seconds alternate between the gateways,
``--rounds`` times, after a short warm-up of each. Per round: requests that came back 200
times the tokens in each (every request is a whole canned stream) over the round's duration,
wrk's latency p50/p99, and the CPU seconds the gateway's processes (the supervisor's process
group) spent, from ``/proc``: tokens per gateway CPU-second says what a worker costs, whatever
else the machine runs. The load average before and after is printed with the table, and the
rows go to ``results/<name>.json`` and ``.md``.

Scaling: ``ratio`` is N workers' tokens/s over one worker's in the same run; near-linear is
``ratio >= 0.8 x N`` while N is at most the cores free for the gateway (client and upstream
take some of them here). On a shared machine the gateways get what the scheduler leaves
them, so the report also extrapolates from CPU efficiency: N workers on N free cores relay
about N x (their tokens per CPU-second / one worker's) x one worker's tokens/s. Last, what
the host board's operations cost (``costs.py``).

Parameters: ``--workers`` (comma-separated), ``--tokens``, ``--connections``, ``--round-s``,
``--rounds``, ``--port`` (nginx's; the gateways take the next ones), ``--name``, ``--nice``
(a negative niceness, as root, for the processes and their sessions' autogroups, gives the
benchmark the cores ahead of the other work on a shared machine, so the gateway is the
bottleneck, not the scheduler's share).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from gateway.children import running
from loadtests.kit.ports import free_port
from loadtests.kit.processes import gateway_cmd
from loadtests.workers.canned import nginx_conf, temp_dirs, write_canned, wrk_script
from loadtests.workers.costs import board_costs

HERE = Path(__file__).resolve().parent
TICKS = os.sysconf("SC_CLK_TCK")


def _policy(nginx_port: int) -> str:
    return (
        f"backends:\n  - {{name: up-0, url: 'http://127.0.0.1:{nginx_port}', engine: openai,"
        " model: fake-model, pool: main, max_inflight: 10000}\n"
        "models:\n  bench: {pool: main}\n"
        "server: {max_keepalive_connections: 1000, access_log: false}\n"
    )


def group_cpu_s(pgid: int) -> float:
    """CPU seconds (user + system) of every live process in process group ``pgid``."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:  # pgrp; utime and stime follow at 11 and 12
            total += int(fields[11]) + int(fields[12])
    return total / TICKS


def _niced(argv: list[str], nice: int) -> list[str]:
    return ["nice", "-n", str(nice), *argv] if nice else argv


def prioritise(pid: int | str, nice: int) -> None:
    """Give process ``pid``'s session the niceness ``nice`` too: with autogroup scheduling
    (Linux's default for desktops and many servers) the CPU is shared between sessions first,
    and a process's own niceness only counts inside its session."""
    if nice:
        set_autogroup(pid, nice)


def set_autogroup(pid: int | str, nice: int) -> None:
    with contextlib.suppress(OSError):
        Path(f"/proc/{pid}/autogroup").write_text(str(nice))


def wrk_round(url: str, script: Path, c: int, seconds: float, nice: int = 0) -> dict[str, Any]:
    wrk = shutil.which("wrk")
    if wrk is None:
        raise SystemExit("wrk is needed: apt-get install wrk")
    argv = [wrk, "-t1", f"-c{c}", f"-d{seconds:g}s", "--latency", "-s", str(script), url]
    argv = _niced(argv, nice)
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    line = next(ln for ln in out.splitlines() if ln.startswith("WRK "))
    figures: dict[str, Any] = json.loads(line[4:])
    return figures


@contextmanager
def _servers(args: argparse.Namespace, root: Path) -> Iterator[dict[int, tuple[str, int]]]:
    """nginx, then one gateway per worker count: {workers: (url, process group)}."""
    for folder in temp_dirs(root):
        folder.mkdir(parents=True, exist_ok=True)
    conf = root / "nginx.conf"
    conf.write_text(nginx_conf(root, args.ports[0]))
    write_canned(root, args.tokens)
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    policy = root / "policy.yaml"
    policy.write_text(_policy(args.ports[0]))
    found: dict[int, tuple[str, int]] = {}
    with ExitStack() as stack:
        up = f"http://127.0.0.1:{args.ports[0]}/v1/models"
        nginx_argv = _niced([nginx, "-c", str(conf)], args.nice)
        prioritise(
            stack.enter_context(running(nginx_argv, [up], root / "nginx.log")).pid, args.nice
        )
        for offset, workers in enumerate(args.workers, start=1):
            port = args.ports[offset]
            argv = _niced(
                [*gateway_cmd(policy, port, workers), "--log-level", "warning"], args.nice
            )
            url = f"http://127.0.0.1:{port}"
            log = root / f"gateway-{workers}.log"
            proc = stack.enter_context(running(argv, [url + "/readyz"], log, timeout_s=120))
            prioritise(proc.pid, args.nice)
            found[workers] = (url, proc.pid)
        yield found


def _row(workers: int, figures: dict[str, Any], cpu_s: float, tokens: int) -> dict[str, Any]:
    seconds = figures["duration_us"] / 1e6
    good = figures["requests"] - figures["status"]
    relayed = good * tokens
    return {
        "workers": workers,
        "tokens_per_s": round(relayed / seconds, 1),
        "requests_per_s": round(good / seconds, 1),
        "errors": figures["status"] + figures["read"] + figures["timeout"] + figures["connect"],
        "p50_ms": round(figures["p50_us"] / 1000, 2),
        "p99_ms": round(figures["p99_us"] / 1000, 2),
        "gateway_cpu_s": round(cpu_s, 2),
        "tokens_per_cpu_s": round(relayed / cpu_s, 1) if cpu_s else None,
    }


def _summary(rows: list[dict[str, Any]], workers: list[int]) -> dict[int, dict[str, float]]:
    out: dict[int, dict[str, float]] = {}
    for n in workers:
        mine = [r for r in rows if r["workers"] == n]
        tps = sum(r["tokens_per_s"] for r in mine) / len(mine)
        per_cpu = [r["tokens_per_cpu_s"] for r in mine if r["tokens_per_cpu_s"]]
        out[n] = {
            "tokens_per_s": round(tps, 1),
            "tokens_per_cpu_s": round(sum(per_cpu) / len(per_cpu), 1) if per_cpu else 0.0,
            "cores_used": round(sum(r["cores_used"] for r in mine) / len(mine), 2),
        }
    base = out[workers[0]]["tokens_per_s"]
    for n in workers:
        out[n]["ratio"] = round(out[n]["tokens_per_s"] / base, 3) if base else 0.0
    return out


def _extrapolation(summary: dict[int, dict[str, float]]) -> list[str]:
    """N workers on N free cores relay N times what one worker's core does, times their CPU
    efficiency against one worker's (tokens per CPU-second)."""
    ones = next(iter(summary.values()))["tokens_per_cpu_s"]
    lines = []
    for n, s in summary.items():
        efficiency = s["tokens_per_cpu_s"] / ones if ones else 0.0
        lines.append(
            f"- {n} worker(s): {efficiency:.2f} of one worker's tokens per CPU-second: "
            f"with {n} free cores, {n * efficiency:.2f} x one worker's tokens/s "
            f"(near-linear needs {0.8 * n:.1f})"
        )
    return lines


def _report(
    rows: list[dict[str, Any]], summary: dict[int, dict[str, float]], meta: dict[str, Any]
) -> str:
    lines = [
        f"tokens per response {meta['tokens']}, {meta['connections']} connections, "
        f"{meta['round_s']} s rounds; load average before {meta['load_before']}, "
        f"after {meta['load_after']}; {meta['cores']} cores; niceness {meta['nice']}",
        "",
        "| round | workers | tokens/s | requests/s | p50 ms | p99 ms | gateway CPU s "
        "| tokens per CPU-s | errors |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(rows):
        lines.append(
            f"| {i // len(summary) + 1} | {r['workers']} | {r['tokens_per_s']} "
            f"| {r['requests_per_s']} | {r['p50_ms']} | {r['p99_ms']} | {r['gateway_cpu_s']} "
            f"| {r['tokens_per_cpu_s']} | {r['errors']} |"
        )
    lines += [
        "",
        "| workers | mean tokens/s | x one worker | tokens per CPU-s | gateway cores used |",
        "|---|---|---|---|---|",
    ]
    for n, s in summary.items():
        lines.append(
            f"| {n} | {s['tokens_per_s']} | {s['ratio']} | {s['tokens_per_cpu_s']} "
            f"| {s['cores_used']} |"
        )
    lines += ["", "Extrapolated to free cores:", *_extrapolation(summary)]
    lines += ["", "Host board, microseconds per operation:"]
    lines += [f"- {name}: {us} us" for name, us in meta["board_costs_us"].items()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m loadtests.workers", description=__doc__)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--round-s", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--port", type=int, default=0, help="nginx's (default: a free one)")
    parser.add_argument("--name", default="workers")
    parser.add_argument(
        "--nice", type=int, default=0, help="run nginx, the gateways and wrk at this niceness"
    )
    args = parser.parse_args(argv)
    args.workers = [int(w) for w in args.workers.split(",")]
    args.ports = [args.port or free_port()] + [
        args.port + i if args.port else free_port() for i in range(1, len(args.workers) + 1)
    ]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        root.chmod(0o755)  # nginx's worker (nobody, when started as root) reads the canned file
        script = root / "stream.lua"
        script.write_text(wrk_script())
        autogroup = Path("/proc/self/autogroup")
        kept = autogroup.read_text().split()[-1] if autogroup.exists() else "0"
        prioritise("self", args.nice)  # wrk runs in this session
        with contextlib.ExitStack() as restore, _servers(args, root) as gateways:
            if args.nice:
                restore.callback(set_autogroup, "self", int(kept))
            for url, _ in gateways.values():  # warm connections and code paths
                wrk_round(url + "/v1/chat/completions", script, args.connections, 2.0, args.nice)
            load_before = os.getloadavg()
            for _ in range(args.rounds):
                for workers, (url, pgid) in gateways.items():
                    before = group_cpu_s(pgid)
                    began = time.monotonic()
                    target = url + "/v1/chat/completions"
                    figures = wrk_round(target, script, args.connections, args.round_s, args.nice)
                    cpu = group_cpu_s(pgid) - before
                    rows.append(_row(workers, figures, cpu, args.tokens))
                    rows[-1]["cores_used"] = round(cpu / (time.monotonic() - began), 2)
            load_after = os.getloadavg()
    summary = _summary(rows, args.workers)
    meta = {
        "tokens": args.tokens,
        "connections": args.connections,
        "round_s": args.round_s,
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in load_after],
        "cores": len(os.sched_getaffinity(0)),
        "python": sys.version.split()[0],
        "nice": args.nice,
        "board_costs_us": board_costs(),
    }
    report = _report(rows, summary, meta)
    print(report)
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    (out / f"{args.name}.json").write_text(
        json.dumps({"meta": meta, "rows": rows, "summary": summary}, indent=1)
    )
    (out / f"{args.name}.md").write_text(report)
    return 0
