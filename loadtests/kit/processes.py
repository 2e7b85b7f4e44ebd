"""The simulated fleet, the gateway and the fake upstream as child processes.

``fleet_cmd``, ``gateway_cmd`` and ``fake_argv`` are their command lines; ``fleet_up`` starts
a fleet (``gateway.children.running``), waits until every replica answers ``/health`` and
stops it on exit. Parameters: the fleet file and
its parsed config, the gateway's policy file and port, a log file, a start-up timeout.
"""

from __future__ import annotations

import subprocess
import sys
from contextlib import AbstractContextManager
from pathlib import Path

from gateway.children import running
from loadtests.loadgen.fleet import replicas
from loadtests.sim.fleet import FleetConfig


def fleet_cmd(path: Path) -> list[str]:
    """The simulator's command line for a fleet file."""
    return [sys.executable, "-m", "loadtests.sim", "--fleet", str(path)]


def fleet_up(
    fleet: FleetConfig, fleet_path: Path, log_path: Path, timeout_s: float
) -> AbstractContextManager[subprocess.Popen[bytes]]:
    """A fresh simulated fleet, healthy on entry and stopped on exit (any target's runs)."""
    health = [r.url + "/health" for r in replicas(fleet)]
    return running(fleet_cmd(fleet_path), health, log_path, timeout_s=timeout_s)


def gateway_cmd(policy: Path, port: int, workers: int = 1) -> list[str]:
    """``latency-gateway serve`` (or ``python -m gateway serve`` where the script is not
    installed) under ``policy`` on 127.0.0.1:``port``, with ``workers`` processes (one
    unless asked: the benchmarks compare one process with its peers)."""
    script = Path(sys.executable).with_name("latency-gateway")
    head = [str(script)] if script.exists() else [sys.executable, "-m", "gateway"]
    return [*head, "serve", "--policy", str(policy), "--host", "127.0.0.1", "--port", str(port),
            "--workers", str(workers)]  # fmt: skip


def fake_argv(port: int, ttft_ms: float, tokens: int, itl_ms: float) -> list[str]:
    """``loadtests.kit.fake_upstream`` as its own process, with its timing."""
    return [sys.executable, "-m", "loadtests.kit.fake_upstream", "--port", str(port),
            "--ttft-ms", str(ttft_ms), "--tokens", str(tokens),
            "--itl-ms", str(itl_ms)]  # fmt: skip
