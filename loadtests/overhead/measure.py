"""What the gateway adds over going direct to a fast upstream on loopback: the measurement.

Method: one fake upstream (``loadtests.kit.fake_upstream``: 20 ms to first token, then 20
tokens 5 ms apart) and one gateway in front of it, each its own process (``cli.py``). A closed
loop of ``c`` streaming clients runs on each endpoint in rounds that alternate direct,
gateway, direct, ... so both see the same machine noise, after a short warm-up of each; a
path's TTFT is the time to the first SSE data event. ``flat_payload`` asks the fake to answer
at once, so requests/s measures what each path can carry. The client is the gateway's own
lean HTTP/1.1 client on uvloop, so the load generator costs as little CPU as it can on a
2-core machine where client, gateway and upstream compete for the cores.

Parameters (``measure``): the endpoints, ``c`` clients, ``rounds``, ``round_s`` seconds per
round, the request body.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import orjson

from gateway.upstream import ConnectionPool, Origin, UpstreamIOError
from loadtests.loadgen.stats import percentile

_REQUEST = {
    "model": "bench",
    "messages": [{"role": "user", "content": "Say something short."}],
    "stream": True,
    "max_tokens": 20,
}
PAYLOAD = orjson.dumps(_REQUEST)
# Capacity: the fake answers at once (the gateway passes the unknown "fake" field through),
# so requests/s measures what each path can carry, not the fake's timing.
_FLAT_OUT = orjson.dumps({**_REQUEST, "fake": {"ttft_s": 0, "itl_s": 0}})
_HEADERS = [("content-type", "application/json")]
CpuReader = Callable[[], float]  # a process tree's CPU seconds so far


@dataclass
class PathStats:
    ttft: list[float] = field(default_factory=list)
    completed: int = 0
    errors: int = 0
    seconds: float = 0.0
    cpu_s: float = 0.0  # the target process tree's CPU time over the rounds (when read)

    def rps(self) -> float:
        return self.completed / self.seconds if self.seconds else 0.0

    def cpu_us_per_request(self) -> float:
        return self.cpu_s / self.completed * 1e6 if self.completed else float("nan")


def pct(values: list[float], q: float) -> float:
    value = percentile(values, q)
    return float("nan") if value is None else value


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One path the clients measure: a base URL and the headers it needs (an API key)."""

    url: str
    headers: tuple[tuple[str, str], ...] = ()


async def timed_stream(
    pool: ConnectionPool,
    origin: Origin,
    stats: PathStats,
    payload: bytes,
    headers: list[tuple[str, str]],
) -> None:
    """One streamed chat: its TTFT (the first data event) into ``stats``, or an error."""
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
    payload: bytes = PAYLOAD,
    cpu: CpuReader | None = None,
) -> None:
    stop = time.perf_counter() + seconds
    origin = Origin.from_url(endpoint.url)
    headers = [*_HEADERS, *endpoint.headers]

    async def worker() -> None:
        while time.perf_counter() < stop:
            try:
                await timed_stream(pool, origin, stats, payload, headers)
            except UpstreamIOError:
                stats.errors += 1

    began = time.perf_counter()
    cpu_before = cpu() if cpu is not None else 0.0
    await asyncio.gather(*(worker() for _ in range(c)))
    stats.seconds += time.perf_counter() - began
    if cpu is not None:
        stats.cpu_s += cpu() - cpu_before


async def measure(
    endpoints: Mapping[str, Endpoint],
    c: int,
    rounds: int,
    round_s: float,
    payload: bytes = PAYLOAD,
    cpu: Mapping[str, CpuReader] | None = None,
) -> dict[str, PathStats]:
    """``c`` closed-loop clients on each endpoint in turn, ``rounds`` times (interleaved, so
    every path sees the same machine noise), after a short warm-up of each; ``cpu``: by
    endpoint name, a reading of its process's CPU seconds, taken around each round."""
    cpu = cpu or {}
    results = {name: PathStats() for name in endpoints}
    pool = ConnectionPool(max_idle_per_origin=c + 8)
    try:
        for endpoint in endpoints.values():  # warm connections
            await _round(pool, endpoint, c, 0.5, PathStats(), payload)
        for _ in range(rounds):
            for name, endpoint in endpoints.items():
                await _round(pool, endpoint, c, round_s, results[name], payload, cpu.get(name))
    finally:
        pool.close()
    return results


def flat_payload() -> bytes:
    """A request the fake answers at once: for the most requests/s a path carries."""
    return _FLAT_OUT


def ttft_ms(stats: PathStats, q: float) -> float:
    """The ``q``-th percentile of a path's TTFT in ms (NaN when nothing completed)."""
    return round(pct(stats.ttft, q) * 1000, 2)


def gateway_policy(upstream_url: str) -> str:
    """The gateway's policy for this benchmark: public model ``bench`` on one fake upstream."""
    return (
        f"backends:\n  - {{name: up-0, url: '{upstream_url}', engine: openai,"
        f" model: fake-model, pool: main, max_inflight: 10000}}\n"
        "models:\n  bench: {pool: main}\n"
        "server: {max_keepalive_connections: 1000}\n"
    )
