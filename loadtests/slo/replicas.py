"""Several gateway processes in front of one fleet, as the Kubernetes manifests run them.

``gateway-x2``: two ``latency-gateway serve`` processes, each with the same policy (the
default one: backends and models only, no cluster section) on ports of their own, in front
of one fresh fleet; the load client alternates between them by request index, so each gets
half of the arrivals (every other request), as a Service spreading connections would. They
share nothing but the engines: each scrapes the engines' ``/metrics`` itself (the engines'
own reports of running and waiting requests are the one truth both see) and knows only its
own in-flight requests, queue and hold times.

``gateway-x2-cluster``: the same two processes with the policy's ``cluster`` section on and a
real ``redis-server`` (loopback, no persistence) between them: cluster admission's leases
(``gateway/cluster/``) share each pool's concurrency limit.

Parameters: ``ports`` (one per process), ``redis_port``, the policy text.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from loadtests.kit.processes import fleet_up
from loadtests.loadgen.client import Target
from loadtests.peers.load_suite import Bench
from loadtests.peers.targets import launched, plan_launch

NAMES = ("gateway-x2", "gateway-x2-cluster")
PROCESSES = 2


def cluster_policy(policy_text: str, redis_url: str) -> str:
    """The policy with cluster admission on, through ``redis_url``."""
    policy: dict[str, Any] = yaml.safe_load(policy_text)
    policy["cluster"] = {"enabled": True, "redis_url": redis_url}
    return yaml.safe_dump(policy, sort_keys=False)


def redis_argv(binary: str, port: int, folder: Path) -> list[str]:
    return [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
            "--appendonly", "no", "--dir", str(folder)]  # fmt: skip


@contextmanager
def _redis(port: int, out: Path, timeout_s: float) -> Iterator[str]:
    binary = shutil.which("redis-server")
    if binary is None:
        raise FileNotFoundError("redis-server is not installed")
    out.mkdir(parents=True, exist_ok=True)
    with subprocess.Popen(redis_argv(binary, port, out), stdout=subprocess.DEVNULL) as proc:
        try:
            _wait_listening(port, proc, timeout_s)
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def _wait_listening(port: int, proc: subprocess.Popen[bytes], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1.0).close()
        except OSError:
            time.sleep(0.1)
            continue
        return
    raise FileNotFoundError(f"redis-server did not listen on port {port}")


@contextmanager
def gateways(name: str, bench: Bench, out: Path, ports: tuple[int, ...],
             redis_port: int) -> Iterator[list[Target]]:  # fmt: skip
    """A fresh fleet and the gateway processes of ``name``; their client targets."""
    with ExitStack() as stack:
        policy = bench.front.gateway_policy
        if name == "gateway-x2-cluster":
            url = stack.enter_context(_redis(redis_port, out / "redis", bench.startup_timeout_s))
            policy = cluster_policy(policy, url)
        front = replace(bench.front, gateway_policy=policy)
        stack.enter_context(fleet_up(bench.fleet, bench.fleet_path, out / "fleet.log",
                                     bench.startup_timeout_s))  # fmt: skip
        targets = []
        for i, port in enumerate(ports):
            folder = out / f"gateway-{i}"
            launch = plan_launch("gateway", front, bench.setup, port, folder, bench.binaries)
            stack.enter_context(launched(launch, folder / "process.log",
                                         bench.startup_timeout_s))  # fmt: skip
            targets.append(Target(launch.url, launch.model, dict(launch.headers)))
        yield targets
