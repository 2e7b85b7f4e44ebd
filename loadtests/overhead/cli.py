"""``python -m loadtests.overhead``: the gateway and a fake upstream as processes, the
closed-loop rounds of ``measure.py`` per concurrency level, a table of TTFT percentiles and
requests/s, and the most requests/s each path carries.

Parameters: ``--levels`` (concurrencies), ``--rounds`` (pairs of rounds), ``--round-s``
(seconds per round), ``--ttft-ms``, ``--tokens``, ``--itl-ms`` (the fake's timing),
``--capacity-c``, ``--port`` (the fake's; the gateway's is the next one), ``--redis-url``
(cluster admission through that Redis: a lease per request), ``--json FILE``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import uvloop

from gateway.children import running
from loadtests.kit.processes import fake_argv
from loadtests.overhead.measure import (
    PAYLOAD,
    Endpoint,
    flat_payload,
    gateway_policy,
    measure,
    pct,
    ttft_ms,
)


async def _level(
    direct: str, gateway: str, c: int, rounds: int, round_s: float, payload: bytes = PAYLOAD
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
    row["ttft_p50_ratio"] = round(pct(g.ttft, 50) / pct(d.ttft, 50), 3)
    row["ttft_p99_ratio"] = round(pct(g.ttft, 99) / pct(d.ttft, 99), 3)
    return row


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
    parser = argparse.ArgumentParser(prog="python -m loadtests.overhead", description=__doc__)
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
            _level(direct, gateway, args.capacity_c, args.rounds, args.round_s, flat_payload())
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
