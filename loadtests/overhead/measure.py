"""Benchmark: what the gateway adds over going direct to a fast upstream on loopback.

Method: one fake upstream (``loadtests.fake_upstream``: 20 ms to first token, then 20 tokens
5 ms apart) and one gateway in front of it, each its own process. For each concurrency level
a closed loop of ``c`` streaming clients runs in rounds that alternate direct, gateway,
direct, ... so both see the same machine noise. Reported per level: TTFT p50/p99 of each
path and their ratio, and requests/s of each path. Then the most requests/s each path carries
when the fake answers at once (``--capacity-c`` clients). The client is the gateway's own lean
HTTP/1.1 client on uvloop, so the load generator costs as little CPU as it can on a 2-core
machine where client, gateway and upstream compete for the cores.

Parameters: ``--levels`` (concurrencies), ``--rounds`` (pairs of rounds), ``--round-s``
(seconds per round), ``--ttft-ms``, ``--tokens``, ``--itl-ms`` (the fake's timing),
``--redis-url`` (turn on cluster admission through that Redis: a lease per request).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import uvloop

from gateway.children import running
from gateway.upstream import ConnectionPool, Origin, UpstreamIOError
from loadtests.loadgen.stats import percentile

_REQUEST = {
    "model": "bench",
    "messages": [{"role": "user", "content": "Say something short."}],
    "stream": True,
    "max_tokens": 20,
}
_PAYLOAD = orjson.dumps(_REQUEST)
# Capacity: the fake answers at once (the gateway passes the unknown "fake" field through),
# so requests/s measures what each path can carry, not the fake's timing.
_FLAT_OUT = orjson.dumps({**_REQUEST, "fake": {"ttft_s": 0, "itl_s": 0}})
_HEADERS = [("content-type", "application/json")]


@dataclass
class PathStats:
    ttft: list[float] = field(default_factory=list)
    completed: int = 0
    errors: int = 0
    seconds: float = 0.0

    def rps(self) -> float:
        return self.completed / self.seconds if self.seconds else 0.0


def _pct(values: list[float], q: float) -> float:
    value = percentile(values, q)
    return float("nan") if value is None else value


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One path the clients measure: a base URL and the headers it needs (an API key)."""

    url: str
    headers: tuple[tuple[str, str], ...] = ()


async def _one(
    pool: ConnectionPool,
    origin: Origin,
    stats: PathStats,
    payload: bytes,
    headers: list[tuple[str, str]],
) -> None:
    start = time.perf_counter()
    first: float | None = None
    response = await pool.request(
        origin, "POST", "/v1/chat/completions", headers, payload, connect_timeout_s=10
    )
    try:
        if response.status != 200:
            await response.read()
            stats.errors += 1
            return
        async for chunk in response.chunks():
            if first is None and b"data: {" in chunk:
                first = time.perf_counter()
    finally:
        response.close()
    if first is None:
        stats.errors += 1
        return
    stats.ttft.append(first - start)
    stats.completed += 1


async def _round(
    pool: ConnectionPool,
    endpoint: Endpoint,
    c: int,
    seconds: float,
    stats: PathStats,
    payload: bytes = _PAYLOAD,
) -> None:
    stop = time.perf_counter() + seconds
    origin = Origin.from_url(endpoint.url)
    headers = [*_HEADERS, *endpoint.headers]

    async def worker() -> None:
        while time.perf_counter() < stop:
            try:
                await _one(pool, origin, stats, payload, headers)
            except UpstreamIOError:
                stats.errors += 1

    began = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(c)))
    stats.seconds += time.perf_counter() - began


async def measure(
    endpoints: Mapping[str, Endpoint],
    c: int,
    rounds: int,
    round_s: float,
    payload: bytes = _PAYLOAD,
) -> dict[str, PathStats]:
    """``c`` closed-loop clients on each endpoint in turn, ``rounds`` times (interleaved, so
    every path sees the same machine noise), after a short warm-up of each."""
    results = {name: PathStats() for name in endpoints}
    pool = ConnectionPool(max_idle_per_origin=c + 8)
    try:
        for endpoint in endpoints.values():  # warm connections
            await _round(pool, endpoint, c, 0.5, PathStats(), payload)
        for _ in range(rounds):
            for name, endpoint in endpoints.items():
                await _round(pool, endpoint, c, round_s, results[name], payload)
    finally:
        pool.close()
    return results


def flat_payload() -> bytes:
    """A request the fake answers at once: for the most requests/s a path carries."""
    return _FLAT_OUT


def ttft_ms(stats: PathStats, q: float) -> float:
    """The ``q``-th percentile of a path's TTFT in ms (NaN when nothing completed)."""
    return round(_pct(stats.ttft, q) * 1000, 2)


async def _level(
    direct: str, gateway: str, c: int, rounds: int, round_s: float, payload: bytes = _PAYLOAD
) -> dict[str, object]:
    endpoints = {"direct": Endpoint(direct), "gateway": Endpoint(gateway)}
    results = await measure(endpoints, c, rounds, round_s, payload)
    d, g = results["direct"], results["gateway"]
    row: dict[str, object] = {"concurrency": c}
    for name, st in results.items():
        row[f"{name}_ttft_p50_ms"] = ttft_ms(st, 50)
        row[f"{name}_ttft_p99_ms"] = ttft_ms(st, 99)
        row[f"{name}_rps"] = round(st.rps(), 1)
        row[f"{name}_errors"] = st.errors
    row["ttft_p50_ratio"] = round(_pct(g.ttft, 50) / _pct(d.ttft, 50), 3)
    row["ttft_p99_ratio"] = round(_pct(g.ttft, 99) / _pct(d.ttft, 99), 3)
    return row


def gateway_policy(upstream_url: str) -> str:
    """The gateway's policy for this benchmark: public model ``bench`` on one fake upstream."""
    return (
        f"backends:\n  - {{name: up-0, url: '{upstream_url}', engine: openai,"
        f" model: fake-model, pool: main, max_inflight: 10000}}\n"
        "models:\n  bench: {pool: main}\n"
        "server: {max_keepalive_connections: 1000}\n"
    )


def fake_argv(port: int, ttft_ms: float, tokens: int, itl_ms: float) -> list[str]:
    """The fake upstream as its own process."""
    return [sys.executable, "-m", "loadtests.fake_upstream", "--port", str(port),
            "--ttft-ms", str(ttft_ms), "--tokens", str(tokens),
            "--itl-ms", str(itl_ms)]  # fmt: skip


@contextmanager
def _processes(args: argparse.Namespace) -> Iterator[tuple[str, str]]:
    up_port, gw_port = args.port, args.port + 1
    policy = gateway_policy(f"http://127.0.0.1:{up_port}")
    if args.redis_url:
        policy += f"cluster: {{enabled: true, redis_url: '{args.redis_url}'}}\n"
    py = sys.executable
    upstream_argv = fake_argv(up_port, args.ttft_ms, args.tokens, args.itl_ms)
    with tempfile.TemporaryDirectory() as tmp:
        policy_path = Path(tmp) / "policy.yaml"
        policy_path.write_text(policy)
        gateway_argv = [py, "-m", "gateway", "serve", "--policy", str(policy_path),
                        "--port", str(gw_port), "--log-level", "warning"]  # fmt: skip
        up_url, gw_url = f"http://127.0.0.1:{up_port}", f"http://127.0.0.1:{gw_port}"
        with (
            running(upstream_argv, [up_url + "/health"], Path(tmp) / "upstream.log"),
            running(gateway_argv, [gw_url + "/readyz"], Path(tmp) / "gateway.log"),
        ):
            yield up_url, gw_url


def _table(rows: list[dict[str, object]]) -> str:
    head = (
        "| c | direct TTFT p50/p99 ms | gateway TTFT p50/p99 ms | ratio p50 | ratio p99 "
        "| direct req/s | gateway req/s | errors d/g |\n|---|---|---|---|---|---|---|---|"
    )
    lines = [head]
    for r in rows:
        lines.append(
            f"| {r['concurrency']} | {r['direct_ttft_p50_ms']} / {r['direct_ttft_p99_ms']} "
            f"| {r['gateway_ttft_p50_ms']} / {r['gateway_ttft_p99_ms']} "
            f"| {r['ttft_p50_ratio']}x | {r['ttft_p99_ratio']}x "
            f"| {r['direct_rps']} | {r['gateway_rps']} "
            f"| {r['direct_errors']}/{r['gateway_errors']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--levels", default="1,16,64")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--round-s", type=float, default=4.0)
    parser.add_argument("--port", type=int, default=9750)
    parser.add_argument("--ttft-ms", type=float, default=20.0)
    parser.add_argument("--tokens", type=int, default=20)
    parser.add_argument("--itl-ms", type=float, default=5.0)
    parser.add_argument("--capacity-c", type=int, default=64, help="concurrency for max req/s")
    parser.add_argument("--json", help="also write the rows to this JSON file")
    parser.add_argument("--redis-url", help="cluster admission through this Redis")
    args = parser.parse_args(argv)
    levels = [int(x) for x in args.levels.split(",")]
    with _processes(args) as (direct, gateway):
        rows = [uvloop.run(_level(direct, gateway, c, args.rounds, args.round_s)) for c in levels]
        flat = uvloop.run(
            _level(direct, gateway, args.capacity_c, args.rounds, args.round_s, _FLAT_OUT)
        )
    print(_table(rows))
    print(
        f"\nmax requests/s (zero-delay upstream, c={args.capacity_c}): "
        f"direct {flat['direct_rps']}, gateway {flat['gateway_rps']}"
    )
    rows.append({"capacity": True, **flat})
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
