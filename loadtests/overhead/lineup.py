"""The targets of the overhead benchmark, up in front of one fake upstream, and its three
measurements, each interleaved across the targets so they share the machine's noise.

Targets: ``direct`` (the fake itself), ``gateway`` (``latency-gateway serve``, the full request
path), the peers ``nginx`` (``proxy_buffering off``, upstream keep-alive) and
``vllm-router`` (round robin), started as ``loadtests.peers`` starts them, and on request
``floor`` (``relay_floor.py``: a bare relay on the gateway's server stack). Measurements:

- ``ttft_rows``: closed-loop streaming clients at each concurrency (``measure.measure``);
- ``cpu_rows``: CPU time per streamed token of each proxy's processes (``cpu.cpu_round``),
  rounds alternating between the proxies;
- ``capacity_rows``: the most requests/s each target carries with the fake answering at once,
  and each proxy's CPU time per request.

Parameters: the target names, ``base_port`` (the fake's; targets take ``peers.targets.port_of``),
the gateway's policy text, a folder for configs and logs, the installed peer binaries.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import uvloop

from gateway.children import running
from loadtests.kit.processes import fake_argv
from loadtests.overhead.cpu import CpuSample, cpu_round, tree_cpu_s
from loadtests.overhead.measure import Endpoint, PathStats, flat_payload, measure, ttft_ms
from loadtests.overhead.relay_floor import UPSTREAM_ENV
from loadtests.peers.configs import Upstream
from loadtests.peers.install import Binaries
from loadtests.peers.targets import (
    LAUNCH_ERRORS,
    Front,
    Launch,
    Setup,
    launched_process,
    plan_launch,
    port_of,
)


@dataclass(frozen=True, slots=True)
class Target:
    name: str
    endpoint: Endpoint
    pid: int | None  # None: direct (no process of its own)


@contextmanager
def targets_up(
    names: Sequence[str],
    base_port: int,
    policy: str,
    root: Path,
    binaries: Binaries,
    failures: dict[str, str],
    baseline: Path | None = None,
    gateway_workers: int = 1,
    floor: bool = False,
) -> Iterator[list[Target]]:
    """The fake upstream (20 ms to the first token, 20 tokens 5 ms apart unless a request
    says otherwise) and every target in front of it; a target that fails to start is left
    out and named in ``failures``. ``baseline``: another checkout of the gateway, run beside
    this one as target ``baseline`` (an A/B of two versions in one run); ``gateway_workers``:
    the gateway's ``serve --workers`` (the baseline's too); ``floor``: the bare relay too."""
    fake_url = f"http://127.0.0.1:{base_port}"
    front = Front((Upstream(fake_url, "fake-model"),), "bench", "openai", policy, gateway_workers)
    setup = Setup(gateway_note="full request path, one backend")
    with ExitStack() as stack:
        stack.enter_context(
            running(fake_argv(base_port, 20.0, 20, 5.0), [fake_url + "/health"], root / "fake.log")
        )
        targets = []
        launches = [plan_launch(name, front, setup, port_of(name, base_port), root / name,
                                binaries) for name in names]  # fmt: skip
        if baseline is not None:
            other = plan_launch("gateway", front, setup, base_port + 20, root / "baseline",
                                binaries)  # fmt: skip
            env = {**os.environ, "PYTHONPATH": str(baseline.resolve())}
            launches.append(replace(other, name="baseline", env=env))
        if floor:
            launches.append(floor_launch(base_port + 25, fake_url))
        for launch in launches:
            name = launch.name
            try:
                proc: subprocess.Popen[bytes] | None = stack.enter_context(
                    launched_process(launch, root / name / "process.log")
                )
            except LAUNCH_ERRORS as exc:
                failures[name] = str(exc)
                continue
            endpoint = Endpoint(launch.url, tuple(launch.headers.items()))
            targets.append(Target(name, endpoint, None if proc is None else proc.pid))
        yield targets


def floor_launch(port: int, upstream: str) -> Launch:
    """The bare relay (``relay_floor.py``) on uvicorn as the gateway runs it, one process."""
    url = f"http://127.0.0.1:{port}"
    argv = [sys.executable, "-m", "uvicorn", "loadtests.overhead.relay_floor:app",
            "--app-dir", str(Path(__file__).resolve().parents[2]), "--host", "127.0.0.1",
            "--port", str(port), "--loop", "uvloop", "--http", "httptools", "--lifespan", "off",
            "--no-access-log", "--log-level", "warning"]  # fmt: skip
    return Launch("floor", argv, url, url + "/health", env={UPSTREAM_ENV: upstream})


def _endpoints(targets: Sequence[Target]) -> dict[str, Endpoint]:
    return {t.name: t.endpoint for t in targets}


def ttft_rows(
    targets: Sequence[Target], levels: Sequence[int], rounds: int, round_s: float
) -> list[dict[str, Any]]:
    """Per level and target: TTFT p50/p99, their ratios to direct, requests/s, errors."""
    rows: list[dict[str, Any]] = []
    for c in levels:
        stats = uvloop.run(measure(_endpoints(targets), c, rounds, round_s))
        base = stats.get("direct")
        for name, st in stats.items():
            row: dict[str, Any] = {
                "concurrency": c,
                "target": name,
                "ttft_p50_ms": ttft_ms(st, 50),
                "ttft_p99_ms": ttft_ms(st, 99),
                "rps": round(st.rps(), 1),
                "errors": st.errors,
            }
            if base is not None and base.ttft:
                row["p50_ratio"] = round(row["ttft_p50_ms"] / ttft_ms(base, 50), 3)
                row["p99_ratio"] = round(row["ttft_p99_ms"] / ttft_ms(base, 99), 3)
            rows.append(row)
    return rows


@contextmanager
def profiled(pid: int | None, out: Path | None) -> Iterator[None]:
    """``py-spy record`` of ``pid`` and its children (``serve --workers N``'s workers;
    nonblocking: the target is not paused) into ``out`` for the block, when both are given;
    py-spy writes its file when interrupted."""
    if pid is None or out is None:
        yield
        return
    spy = Path(sys.executable).with_name("py-spy")
    argv = [str(spy) if spy.exists() else "py-spy", "record", "--nonblocking", "-r", "200",
            "--subprocesses", "-p", str(pid), "-o", str(out)]  # fmt: skip
    formats = {".json": "speedscope", ".txt": "raw"}  # else an svg flame graph
    if out.suffix in formats:
        argv += ["-f", formats[out.suffix]]
    with subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as proc:
        try:
            yield
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=60)


def cpu_rows(
    targets: Sequence[Target],
    rounds: int,
    streams: int,
    waves: int,
    payload: bytes,
    profile: Path | None = None,
) -> list[dict[str, Any]]:
    """CPU per streamed token of every target with a process, rounds interleaved;
    ``profile``: a py-spy profile of the gateway's rounds written there (svg, or speedscope
    json)."""
    proxies = [t for t in targets if t.pid is not None]
    samples = {t.name: CpuSample() for t in proxies}
    per_round: dict[str, list[float]] = {t.name: [] for t in proxies}
    gateway = next((t.pid for t in proxies if t.name == "gateway"), None)
    with profiled(gateway, profile):  # an idle gateway adds no samples (the peers' rounds)
        for _ in range(rounds):
            for t in proxies:
                assert t.pid is not None
                one = CpuSample()
                uvloop.run(cpu_round(t.endpoint, t.pid, streams, waves, payload, one))
                per_round[t.name].append(round(one.us_per_token(), 1))
                total = samples[t.name]
                total.cpu_s, total.tokens = total.cpu_s + one.cpu_s, total.tokens + one.tokens
                total.errors += one.errors
    return [
        {
            "target": name,
            "cpu_us_per_token": round(s.us_per_token(), 1),
            "rounds_us_per_token": per_round[name],
            "tokens": s.tokens,
            "cpu_s": round(s.cpu_s, 2),
            "errors": s.errors,
        }
        for name, s in samples.items()
    ]


def capacity_rows(
    targets: Sequence[Target], c: int, rounds: int, round_s: float, profile: Path | None = None
) -> list[dict[str, Any]]:
    """The most requests/s each target carries at ``c`` with the fake answering at once,
    and the CPU time each proxy's processes spent per request meanwhile (``cpu.tree_cpu_s``:
    robust to the machine's load where requests/s is not); ``profile``: a py-spy profile of
    the gateway during these rounds written there."""
    gateway = next((t.pid for t in targets if t.name == "gateway"), None)
    cpu = {t.name: partial(tree_cpu_s, t.pid) for t in targets if t.pid is not None}
    with profiled(gateway, profile):  # an idle gateway adds no samples (the others' rounds)
        stats: dict[str, PathStats] = uvloop.run(
            measure(_endpoints(targets), c, rounds, round_s, flat_payload(), cpu)
        )
    rows: list[dict[str, Any]] = []
    for name, st in stats.items():
        row = {"target": name, "concurrency": c, "max_rps": round(st.rps(), 1), "errors": st.errors}
        if name in cpu:
            row["cpu_us_per_request"] = round(st.cpu_us_per_request(), 1)
        rows.append(row)
    return rows
