"""Benchmark: what cluster admission's Redis leases cost, and how fast Redis trouble is absorbed.

Method: a real ``redis-server`` on a free loopback port (no persistence) and one replica's
``ClusterAdmission`` (the gateway's own code, no HTTP). For each concurrency ``c``, ``c``
workers loop for ``--seconds``: acquire a lease, release it; reported: acquire latency
p50/p99 (microseconds) and leases per second, with the Redis calls the batching needed.
Then Redis is frozen (``SIGSTOP``: connections stay open, nothing answers): the time the
first acquire takes before the replica falls back (bounded by ``op_timeout_s``), and the
latency of the acquires after it, decided locally.

Parameters: ``--levels`` (concurrencies), ``--seconds`` per level, ``--op-timeout-ms``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from prometheus_client import CollectorRegistry

from gateway.cluster.lease_store import RedisLeaseStore
from gateway.cluster.leases import AcquireReply
from gateway.cluster.pool_gate import ClusterAdmission, PoolLeases
from gateway.metrics import GatewayMetrics
from gateway.schema import Cluster
from loadtests.kit.ports import free_port
from loadtests.loadgen.stats import percentile

LIMIT = 100_000  # never full: this measures the cost of a lease, not waiting for one


@contextmanager
def _redis() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server is not installed")
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
        args += ["--appendonly", "no", "--dir", tmp]
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL)
        try:
            _wait_listening(port)
            yield f"redis://127.0.0.1:{port}/0", proc
        finally:
            os.kill(proc.pid, signal.SIGCONT)
            proc.kill()
            proc.wait()


def _wait_listening(port: int) -> None:
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


async def _worker(gate: PoolLeases, until: float, latencies: list[float]) -> None:
    while time.perf_counter() < until:
        start = time.perf_counter()
        lease = await gate.acquire(LIMIT)
        latencies.append(time.perf_counter() - start)
        if lease is not None:
            gate.release(lease, lambda: None)


async def _level(gate: PoolLeases, store: _CountingStore, c: int, seconds: float) -> str:
    latencies: list[float] = []
    before = store.calls
    until = time.perf_counter() + seconds
    await asyncio.gather(*(_worker(gate, until, latencies) for _ in range(c)))
    micros = sorted(x * 1e6 for x in latencies)
    per_call = len(latencies) / max(1, store.calls - before)
    return (
        f"| {c} | {percentile(micros, 50):.0f} / {percentile(micros, 99):.0f} "
        f"| {len(latencies) / seconds:.0f} | {per_call:.1f} |"
    )


async def _frozen(gate: PoolLeases, proc: subprocess.Popen[bytes]) -> str:
    os.kill(proc.pid, signal.SIGSTOP)
    start = time.perf_counter()
    await gate.acquire(LIMIT)
    first = time.perf_counter() - start
    after = []
    for _ in range(1000):
        start = time.perf_counter()
        lease = await gate.acquire(LIMIT)
        after.append((time.perf_counter() - start) * 1e6)
        if lease is not None:
            gate.release(lease, lambda: None)
    after.sort()
    return (
        f"Redis frozen: first acquire {first * 1000:.1f} ms (then local mode); the next 1000 "
        f"acquires p50 {percentile(after, 50):.1f} us, p99 {percentile(after, 99):.1f} us"
    )


async def _run(args: argparse.Namespace) -> None:
    with _redis() as (url, proc):
        settings = Cluster(enabled=True, redis_url=url, op_timeout_s=args.op_timeout_ms / 1000)
        store = _CountingStore(settings, "bench")
        cluster = ClusterAdmission(store, GatewayMetrics(CollectorRegistry()))
        await cluster.renew_all(["p"])
        gate = cluster.pool("p")
        print("| c | acquire p50 / p99 us | leases/s | leases per Redis call |\n|---|---|---|---|")
        for c in (int(x) for x in args.levels.split(",")):
            print(await _level(gate, store, c, args.seconds))
        print(await _frozen(gate, proc))
        await cluster.close()


class _CountingStore(RedisLeaseStore):
    """Counts acquire calls, to show how many leases each batch carried."""

    calls = 0

    async def acquire(
        self, pool: str, leases: Sequence[str], limit: int, held: int
    ) -> AcquireReply:
        self.calls += 1
        return await super().acquire(pool, leases, limit, held)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m loadtests.cluster_leases",
        description=__doc__.splitlines()[0] if __doc__ else None,
    )
    parser.add_argument("--levels", default="1,16,64")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--op-timeout-ms", type=float, default=100.0)
    asyncio.run(_run(parser.parse_args(argv)))
    return 0
