"""Benchmark: what each way of scoring ``route: auto`` adds to an auto-routed request, and to
the gateway's memory (``python -m loadtests.auto_overhead``).

Method: the demo's routing (two pools whose served models state their sizes, a ``route: auto``
model, the difficulty split) in three gateways, each its own process, differing only in
``classify.model``: ``heuristic`` (``enabled: false``), ``default`` (the bundled text model, no
embedding) and ``embedding`` (``embedding: true``: every auto-routed request is embedded for
routing, off the event loop, bounded by ``cache.semantic.embed_timeout_s``; the semantic cache stays
off, as in the demo, so nothing else embeds). Upstream: the fake (``--upstream fake``: one per pool,
a fixed 20 ms to the first token, then 20 tokens 5 ms apart, so any difference is the gateway's) or
the demo's simulated fleet (``--upstream demo``, 2 small + 2 large vLLM replicas on the demo's
ports). Clients: ``c`` closed-loop streaming clients (``loadtests.overhead``'s measure), asking
``auto`` the team's 350 labelled prompts in turn (varied lengths, no two alike in a row), rounds
alternating between the gateways (and the fake directly) so that all see the same machine noise. The
``embedding`` gateway is warmed until its answers say ``by=model+embedding`` (its model loaded).

Reported per ``c``: TTFT p50/p99 per path, and each gateway's p50/p99 minus the heuristic
gateway's (what the scoring adds) and minus the direct path's (the whole gateway overhead,
fake upstream only); then each gateway's resident memory after the run (VmRSS, and its peak
VmHWM, summed over its process and any children). Each gateway runs one worker
(``--workers 1``), so the figures are one process's.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import orjson
import uvloop

from gateway.children import running
from gateway.classify.exemplars import read_exemplars
from gateway.commands.demo import FLEET_ARGV
from gateway.upstream import ConnectionPool, Origin, UpstreamIOError
from loadtests.kit.processes import fake_argv
from loadtests.overhead.measure import Endpoint, PathStats, timed_stream, ttft_ms

ROOT = Path(__file__).resolve().parents[2]  # the repository
PROMPTS = ROOT / "policies/exemplars/difficulty.jsonl"
VARIANTS = {
    "heuristic": "classify: {model: {enabled: false}}\n",
    "default": "",
    "embedding": "classify: {model: {embedding: true}}\n",
}
SMALL, LARGE = "Qwen/Qwen2.5-1.5B-Instruct", "meta-llama/Llama-3.1-70B-Instruct"
DEMO_BACKENDS = {"small": (9101, 9102), "large": (9201, 9202)}


def policy(urls: dict[str, list[str]], engine: str, variant: str) -> str:
    """The demo's routing over ``urls`` (pool -> backend URLs) and the variant's scoring."""
    lines = ["backends:"]
    for pool, model in (("small", SMALL), ("large", LARGE)):
        for i, url in enumerate(urls[pool]):
            lines.append(
                f"  - {{name: {pool}-{i}, url: '{url}', engine: {engine}, model: '{model}', "
                f"pool: {pool}, max_inflight: 10000}}"
            )
    lines += [
        "models:",
        "  auto: {route: auto}",
        "routing: {default_pool: small, auto: {small: small, large: large}}",
        "server: {max_keepalive_connections: 1000}",
    ]
    return "\n".join(lines) + "\n" + VARIANTS[variant]


def payloads() -> list[bytes]:
    prompts, _ = read_exemplars(PROMPTS)
    return [
        orjson.dumps(
            {
                "model": "auto",
                "messages": [{"role": "user", "content": p}],
                "stream": True,
                "max_tokens": 20,
            }
        )
        for p in prompts
    ]


def warm(url: str, wanted: str, timeout_s: float = 300.0) -> None:
    """Ask until the route reason contains ``wanted`` (say, the embedding model loaded)."""
    body = {"model": "auto", "messages": [{"role": "user", "content": "Warm up, please."}]}
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        reply = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=30)
        if wanted in reply.headers.get("x-gateway-route-reason", ""):
            return
        time.sleep(1.0)
    raise RuntimeError(f"{url} never answered with {wanted!r} in its route reason")


def memory_kib(pid: int) -> tuple[int, int]:
    """VmRSS and VmHWM of a process and its descendants, summed, in KiB."""
    rss = peak = 0
    for one in [pid, *descendants(pid)]:
        a, b = _own_memory_kib(one)
        rss, peak = rss + a, peak + b
    return rss, peak


def descendants(pid: int) -> list[int]:
    """The process ids below ``pid`` (from ``/proc/<pid>/task/*/children``)."""
    found: list[int] = []
    for children in Path(f"/proc/{pid}/task").glob("*/children"):
        for child in map(int, children.read_text().split()):
            found += [child, *descendants(child)]
    return found


def _own_memory_kib(pid: int) -> tuple[int, int]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


_JSON = [("content-type", "application/json")]


async def measure(
    endpoints: dict[str, Endpoint], c: int, rounds: int, round_s: float, bodies: list[bytes]
) -> dict[str, PathStats]:
    """``c`` closed-loop clients on each endpoint in turn, ``rounds`` times, each request the
    next of ``bodies``; after a short warm-up of each endpoint."""
    results = {name: PathStats() for name in endpoints}
    pool = ConnectionPool(max_idle_per_origin=c + 8)
    turns = itertools.cycle(bodies)

    async def one_round(endpoint: Endpoint, seconds: float, stats: PathStats) -> None:
        stop = time.perf_counter() + seconds
        origin = Origin.from_url(endpoint.url)

        async def worker() -> None:
            while time.perf_counter() < stop:
                try:
                    await timed_stream(pool, origin, stats, next(turns), _JSON)
                except UpstreamIOError:
                    stats.errors += 1

        began = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(c)))
        stats.seconds += time.perf_counter() - began

    try:
        for endpoint in endpoints.values():
            await one_round(endpoint, 0.5, PathStats())
        for _ in range(rounds):
            for name, endpoint in endpoints.items():
                await one_round(endpoint, round_s, results[name])
    finally:
        pool.close()
    return results


@contextmanager
def started(args: argparse.Namespace, tmp: Path) -> Iterator[tuple[dict[str, str], dict[str, int]]]:
    """The upstream and the gateways; yields their URLs (``direct`` for the fake) and the
    gateways' process ids."""
    with ExitStack() as stack:
        urls: dict[str, str] = {}
        if args.upstream == "fake":
            backends, engine = {}, "openai"
            for offset, pool in ((10, "small"), (11, "large")):  # one fake per pool
                port = args.port + offset
                up = f"http://127.0.0.1:{port}"
                argv = fake_argv(port, 20.0, 20, 5.0)
                stack.enter_context(running(argv, [up + "/health"], tmp / f"fake-{pool}.log"))
                backends[pool] = [up]
            urls["direct"] = backends["small"][0]
        else:
            backends = {
                pool: [f"http://127.0.0.1:{p}" for p in ports]
                for pool, ports in DEMO_BACKENDS.items()
            }
            health = [u + "/health" for us in backends.values() for u in us]
            stack.enter_context(running(FLEET_ARGV, health, tmp / "fleet.log", timeout_s=120))
            engine = "vllm"
        pids = {}
        for offset, variant in enumerate(VARIANTS, 1):
            port = args.port + offset
            path = tmp / f"{variant}.yaml"
            path.write_text(policy(backends, engine, variant))
            argv = [sys.executable, "-m", "gateway", "serve", "--policy", str(path),
                    "--port", str(port), "--log-level", "warning", "--workers", "1"]  # fmt: skip
            url = f"http://127.0.0.1:{port}"
            proc = stack.enter_context(
                running(argv, [url + "/readyz"], tmp / f"{variant}.log", timeout_s=120)
            )
            urls[variant], pids[variant] = url, proc.pid
        warm(urls["embedding"], "by=model+embedding")
        yield urls, pids


def _rows(c: int, results: dict[str, PathStats], direct: bool) -> list[str]:
    base = results["heuristic"]
    lines = []
    for name, stats in results.items():
        p50, p99 = ttft_ms(stats, 50), ttft_ms(stats, 99)
        over_h = f"{p50 - ttft_ms(base, 50):+.2f} / {p99 - ttft_ms(base, 99):+.2f}"
        over_d = ""
        if direct and name != "direct":
            d = results["direct"]
            over_d = f"{p50 - ttft_ms(d, 50):+.2f} / {p99 - ttft_ms(d, 99):+.2f}"
        n = f"{stats.completed} ({stats.errors} errors)"
        lines.append(f"| {c} | {name} | {p50} / {p99} | {over_h} | {over_d} | {n} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m loadtests.auto_overhead",
        description=__doc__.splitlines()[0] if __doc__ else None,
    )
    parser.add_argument("--upstream", choices=("fake", "demo"), default="fake")
    parser.add_argument("--levels", default="1,32")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--round-s", type=float, default=5.0)
    parser.add_argument("--port", type=int, default=9760)
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    bodies = payloads()
    table = [
        "| c | path | TTFT p50 / p99 ms | minus heuristic p50 / p99 ms "
        "| minus direct p50 / p99 ms | requests |",
        "|---|---|---|---|---|---|",
    ]
    figures: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp, started(args, Path(tmp)) as (urls, pids):
        endpoints = {name: Endpoint(url) for name, url in urls.items()}
        for c in (int(x) for x in args.levels.split(",")):
            results = uvloop.run(measure(endpoints, c, args.rounds, args.round_s, bodies))
            table += _rows(c, results, "direct" in urls)
            figures[f"c{c}"] = {
                name: {"p50": ttft_ms(s, 50), "p99": ttft_ms(s, 99), "n": s.completed}
                for name, s in results.items()
            }
        memory = {name: memory_kib(pid) for name, pid in pids.items()}
    print("\n".join(table))
    print("\n| gateway | RSS MiB | peak RSS MiB |\n|---|---|---|")
    for name, (rss, peak) in memory.items():
        print(f"| {name} | {rss / 1024:.0f} | {peak / 1024:.0f} |")
    figures["memory_kib"] = memory
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    return 0
