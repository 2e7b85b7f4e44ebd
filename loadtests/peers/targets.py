"""The targets of the comparison (our gateway and each peer) and how each one is started.

A ``Front`` is what every target serves: the upstreams, the model name peers are asked for,
the LiteLLM provider prefix, and our gateway's policy text. A ``Setup`` is each peer's
closest configuration for a scenario (LiteLLM routing strategy, vllm-router policy, nginx
balancing and in-flight cap); its ``notes`` are what the report's tables say about it.
``plan_launch`` is pure: it returns the command, environment, files to write, readiness URL
and how clients address the target. ``launched`` writes the files and runs the process with
``gateway.children.running`` (always stopped on exit). ``direct`` has no process:
clients go to the upstreams themselves.

Parameters: ``port`` (the target's own), ``root`` (a per-run folder for configs and logs),
``binaries`` (from ``loadtests.peers.install``), ``master_key`` (LiteLLM's, not the default).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2 as httpx
import yaml

from gateway.children import StartupError, running
from loadtests.kit.processes import gateway_cmd
from loadtests.peers.configs import (
    NGINX_HEALTH,
    Balance,
    RouterLimit,
    Upstream,
    litellm_config,
    nginx_conf,
    nginx_temp_dirs,
    vllm_router_argv,
)
from loadtests.peers.install import Binaries

TARGETS = ("direct", "gateway", "litellm", "vllm-router", "nginx")
# A target that cannot start: never healthy, exited, or its program is not installed.
LAUNCH_ERRORS = (StartupError, FileNotFoundError)
MASTER_KEY = "sk-peer-bench-7f3a"  # LiteLLM refuses the default key; a bench-only value


@dataclass(frozen=True, slots=True)
class Front:
    upstreams: tuple[Upstream, ...]
    public_model: str  # what clients ask the peers for
    provider: str  # LiteLLM provider prefix: openai (fake) or hosted_vllm (simulator)
    gateway_policy: str  # our gateway's policy YAML
    gateway_workers: int = 1  # ``serve --workers``


@dataclass(frozen=True, slots=True)
class Setup:
    """Each peer's closest configuration for one scenario."""

    litellm_strategy: str = "simple-shuffle"
    router_policy: str = "round_robin"
    nginx_balance: Balance = "round_robin"
    nginx_limit: int | None = None
    router_limit: RouterLimit | None = None
    gateway_note: str = "default policy"

    def notes(self) -> dict[str, str]:
        limit = f", limit_conn {self.nginx_limit} (429 beyond)" if self.nginx_limit else ""
        cap = self.router_limit
        router = (
            f", max {cap.max_concurrent} concurrent + queue {cap.queue_size} "
            f"({cap.queue_timeout_s} s), 429 beyond"
            if cap
            else "; no shedding"
        )
        return {
            "direct": "round-robin over the replicas, no proxy",
            "gateway": self.gateway_note,
            "litellm": f"routing_strategy {self.litellm_strategy}; no shedding",
            "vllm-router": f"--policy {self.router_policy}{router}",
            "nginx": f"{self.nginx_balance}{limit}; keep-alive, proxy_buffering off",
        }


@dataclass(frozen=True, slots=True)
class Launch:
    name: str
    argv: list[str]
    url: str
    health: str
    env: Mapping[str, str] | None = None
    files: Mapping[Path, str] = field(default_factory=dict)
    dirs: tuple[Path, ...] = ()
    headers: Mapping[str, str] = field(default_factory=dict)
    # The model clients send; None: the workload's own (our gateway maps it by policy).
    model: str | None = None
    workers: int = 1  # the gateway's ``serve --workers``: measured once every one serves


def _litellm(front: Front, setup: Setup, port: int, root: Path, binaries: Binaries) -> Launch:
    config = root / "litellm.yaml"
    text = yaml.safe_dump(
        litellm_config(front.public_model, front.upstreams, provider=front.provider,
                       routing_strategy=setup.litellm_strategy),
        sort_keys=False,
    )  # fmt: skip
    # No network here: the cost map is the bundled one, and nothing asks a model hub.
    env = {**os.environ, "LITELLM_MASTER_KEY": MASTER_KEY,
           "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOG": "ERROR",
           "HF_HUB_OFFLINE": "1"}  # fmt: skip
    argv = [str(binaries.litellm), "--config", str(config), "--host", "127.0.0.1",
            "--port", str(port), "--num_workers", "1"]  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    return Launch("litellm", argv, url, url + "/health/liveliness", env=env,
                  files={config: text}, headers={"authorization": f"Bearer {MASTER_KEY}"},
                  model=front.public_model)  # fmt: skip


def _nginx(front: Front, setup: Setup, port: int, root: Path, binaries: Binaries) -> Launch:
    # nginx reads relative paths in its config against its prefix (-p): keep all absolute.
    home = (root / "nginx").resolve()
    conf = home / "nginx.conf"
    text = nginx_conf(home, port, front.upstreams, balance=setup.nginx_balance,
                      limit_conn=setup.nginx_limit)  # fmt: skip
    argv = [str(binaries.nginx), "-p", str(home), "-c", str(conf), "-e", str(home / "stderr.log")]
    url = f"http://127.0.0.1:{port}"
    return Launch("nginx", argv, url, url + NGINX_HEALTH, files={conf: text},
                  dirs=tuple(nginx_temp_dirs(home)), model=front.public_model)  # fmt: skip


def plan_launch(
    name: str, front: Front, setup: Setup, port: int, root: Path, binaries: Binaries
) -> Launch:
    """How to start target ``name`` in front of ``front`` (pure)."""
    url = f"http://127.0.0.1:{port}"
    if name == "direct":
        return Launch("direct", [], front.upstreams[0].url, "", model=front.public_model)
    if name == "gateway":
        policy = root / "gateway-policy.yaml"
        argv = gateway_cmd(policy, port, front.gateway_workers)
        return Launch("gateway", argv, url, url + "/readyz", files={policy: front.gateway_policy},
                      workers=front.gateway_workers)  # fmt: skip
    if name == "litellm":
        return _litellm(front, setup, port, root, binaries)
    if name == "vllm-router":
        argv = vllm_router_argv(binaries.vllm_router, port, front.upstreams, setup.router_policy,
                                setup.router_limit)  # fmt: skip
        return Launch("vllm-router", argv, url, url + "/health", model=front.public_model)
    if name == "nginx":
        return _nginx(front, setup, port, root, binaries)
    raise ValueError(f"unknown target {name!r}; choose from {TARGETS}")


@contextmanager
def launched(launch: Launch, log: Path, timeout_s: float = 90.0) -> Iterator[Launch]:
    """Write the launch's files and run it until the block ends (``direct``: nothing)."""
    with launched_process(launch, log, timeout_s):
        yield launch


@contextmanager
def launched_process(
    launch: Launch, log: Path, timeout_s: float = 90.0
) -> Iterator[subprocess.Popen[bytes] | None]:
    """``launched``, yielding the process (None for ``direct``): for its pid."""
    for path, text in launch.files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for folder in launch.dirs:
        folder.mkdir(parents=True, exist_ok=True)
    proc = (
        running(launch.argv, [launch.health], log, timeout_s=timeout_s, env=launch.env)
        if launch.argv
        else nullcontext(None)
    )
    try:
        with proc as process:
            if process is not None and launch.workers > 1:
                workers_serving(launch.url, launch.workers, process, timeout_s)
            yield process
    except Exception:
        _show_log(log)
        raise


def workers_serving(url: str, workers: int, proc: subprocess.Popen[Any], timeout_s: float) -> None:
    """Until the gateway's /metrics has every worker's series (a worker answers its siblings
    once it serves; the first to serve would otherwise take every keep-alive client)."""
    labels = [f'worker="{w}"' for w in range(workers)]
    deadline = time.monotonic() + timeout_s
    with httpx.Client(timeout=5.0) as http:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise StartupError(f"{proc.args!r} exited with {proc.returncode}")
            try:
                text = http.get(url + "/metrics").text
            except httpx.HTTPError:
                text = ""
            if all(label in text for label in labels):
                return
            time.sleep(0.2)
    raise StartupError(f"not every one of {workers} workers served within {timeout_s:.0f}s")


def _show_log(log: Path) -> None:
    if log.exists():
        sys.stderr.write(f"--- {log} (tail) ---\n{log.read_text(errors='replace')[-3000:]}\n")


def port_of(name: str, base: int) -> int:
    """Each target its own port: ``base + 1 + index`` in ``TARGETS``."""
    return base + 1 + TARGETS.index(name)
