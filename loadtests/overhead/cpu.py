"""CPU time a proxy spends per streamed token, read from the kernel's accounts of its processes.

Method: ``streams`` clients each send ``waves`` streaming requests one after another to one
endpoint (the fake upstream answers ``tokens`` tokens ``itl_ms`` apart); the CPU time
(user + system, ``/proc/<pid>/stat`` fields 14 and 15, every thread included) of the proxy's
process and its descendants (nginx's workers) is read before and after, and divided by the
tokens the clients received. CPU time rather than wall time: on a machine shared with other
work a proxy's CPU per token barely moves with the load, its latency does. ``clock_ticks``
converts the kernel's ticks to seconds (``SC_CLK_TCK``); the reading's resolution is one
tick (10 ms), so a round relays thousands of tokens.

Parameters (``cpu_round``): the endpoint, ``streams``, ``waves``, ``tokens``, ``itl_ms``,
the pid whose tree is measured.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path

import orjson

from gateway.upstream import ConnectionPool, Origin, UpstreamIOError
from loadtests.overhead.measure import Endpoint

_PROC = Path("/proc")


def clock_ticks() -> int:
    return os.sysconf("SC_CLK_TCK")


def _stat_fields(pid: int) -> list[str]:
    text = (_PROC / str(pid) / "stat").read_text()
    # The command name (field 2) is in parentheses and may hold spaces: split after it.
    return text[text.rindex(")") + 2 :].split()


def _children(pid: int) -> list[int]:
    kids: list[int] = []
    for task in (_PROC / str(pid) / "task").iterdir():
        listed = (task / "children").read_text().split()
        kids.extend(int(k) for k in listed)
    return kids


def tree_cpu_s(pid: int) -> float:
    """User + system CPU seconds of ``pid`` and every live descendant."""
    ticks = 0
    pending = [pid]
    while pending:
        current = pending.pop()
        try:
            fields = _stat_fields(current)
            pending.extend(_children(current))
        except (FileNotFoundError, ProcessLookupError):
            continue  # it exited meanwhile
        # After the name: state is index 0, so utime (field 14) is index 11, stime index 12.
        ticks += int(fields[11]) + int(fields[12])
    return ticks / clock_ticks()


@dataclass(slots=True)
class CpuSample:
    cpu_s: float = 0.0
    tokens: int = 0
    errors: int = 0

    def us_per_token(self) -> float:
        return self.cpu_s / self.tokens * 1e6 if self.tokens else float("nan")


def stream_payload(tokens: int, itl_ms: float) -> bytes:
    """A streaming chat request the fake answers with ``tokens`` tokens ``itl_ms`` apart."""
    return orjson.dumps(
        {
            "model": "bench",
            "messages": [{"role": "user", "content": "Stream me some tokens."}],
            "stream": True,
            "max_tokens": tokens,
            "fake": {"tokens": tokens, "itl_s": itl_ms / 1000, "ttft_s": 0.01},
        }
    )


async def _stream(
    pool: ConnectionPool, origin: Origin, payload: bytes, headers: list[tuple[str, str]]
) -> int:
    """One request; the number of token events it received (0 on a failure)."""
    response = await pool.request(
        origin, "POST", "/v1/chat/completions", headers, payload, connect_timeout_s=10
    )
    events = 0
    tail = b""
    try:
        if response.status != 200:
            await response.read()
            return 0
        async for chunk in response.chunks():
            # Count event starts across chunk boundaries: carry the last bytes over.
            joined = tail + chunk
            events += joined.count(b"data: {")
            tail = joined[-6:]
    finally:
        response.close()
    return events


async def cpu_round(
    endpoint: Endpoint, pid: int, streams: int, waves: int, payload: bytes, sample: CpuSample
) -> None:
    """``streams`` clients, ``waves`` requests each; adds CPU and tokens to ``sample``."""
    pool = ConnectionPool(max_idle_per_origin=streams + 8)
    origin = Origin.from_url(endpoint.url)
    headers = [("content-type", "application/json"), *endpoint.headers]

    async def client() -> tuple[int, int]:
        got = failed = 0
        for _ in range(waves):
            try:
                events = await _stream(pool, origin, payload, headers)
            except UpstreamIOError:
                events = 0
            got += events
            failed += events == 0
        return got, failed

    try:
        await asyncio.gather(*(_stream(pool, origin, payload, headers) for _ in range(streams)))
        before = tree_cpu_s(pid)
        results = await asyncio.gather(*(client() for _ in range(streams)))
        sample.cpu_s += tree_cpu_s(pid) - before
    finally:
        pool.close()
    sample.tokens += sum(got for got, _ in results)
    sample.errors += sum(failed for _, failed in results)
