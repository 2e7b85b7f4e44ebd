"""Install the peer gateways into their own environments, never the project's; only if missing.

- LiteLLM and vllm-router: one venv each under ``peer_home()``
  (``${XDG_CACHE_HOME:-~/.cache}/latency-gateway/peers/<name>/``), created with the Python
  running this command and filled by that venv's own pip. LiteLLM is pinned (``LITELLM``):
  newer releases miss a dependency on this machine type.
- nginx: Debian's ``nginx-light`` through apt-get (root is needed), when no ``nginx`` binary is
  on the PATH.

Parameters: ``env`` (the environment to read ``XDG_CACHE_HOME``/``HOME`` from), ``home``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

LITELLM = "litellm[proxy]==1.106.2"
VLLM_ROUTER = "vllm-router"


@dataclass(frozen=True, slots=True)
class Binaries:
    """Where each peer's executable is."""

    litellm: Path
    vllm_router: Path
    nginx: Path


def peer_home(env: Mapping[str, str]) -> Path:
    """``${XDG_CACHE_HOME:-~/.cache}/latency-gateway/peers``."""
    cache = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".cache")
    return Path(cache) / "latency-gateway" / "peers"


def venv_binary(home: Path, name: str, script: str) -> Path:
    return home / name / "bin" / script


def _ensure_venv(home: Path, name: str, requirement: str, script: str) -> Path:
    binary = venv_binary(home, name, script)
    if binary.exists():
        return binary
    venv = home / name
    sys.stderr.write(f"installing {requirement} into {venv}\n")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", requirement], check=True)
    if not binary.exists():
        raise RuntimeError(f"{requirement} installed but {binary} is missing")
    return binary


def ensure_nginx() -> Path:
    found = shutil.which("nginx") or (
        "/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None
    )
    if found:
        return Path(found)
    sys.stderr.write("installing Debian's nginx-light\n")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-q"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-q", "nginx-light"], check=True, env=env)
    return Path(shutil.which("nginx") or "/usr/sbin/nginx")


def ensure_all(names: set[str], env: Mapping[str, str] | None = None) -> Binaries:
    """Install the named peers that are missing; paths of all (missing ones not checked)."""
    home = peer_home(os.environ if env is None else env)
    litellm = venv_binary(home, "litellm", "litellm")
    router = venv_binary(home, "vllm-router", "vllm-router")
    nginx = Path("/usr/sbin/nginx")
    if "litellm" in names:
        litellm = _ensure_venv(home, "litellm", LITELLM, "litellm")
    if "vllm-router" in names:
        router = _ensure_venv(home, "vllm-router", VLLM_ROUTER, "vllm-router")
    if "nginx" in names:
        nginx = ensure_nginx()
    return Binaries(litellm=litellm, vllm_router=router, nginx=nginx)


def _run_text(argv: list[str]) -> str:
    if not Path(argv[0]).exists():
        return "not installed"
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    return (done.stdout + done.stderr).strip()


def versions(binaries: Binaries, names: set[str]) -> str:
    """The installed peers' versions, for the report."""
    found = []
    query = "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))"
    if "litellm" in names:
        python = binaries.litellm.with_name("python")
        found.append("litellm " + _run_text([str(python), "-c", query, "litellm"]))
    if "vllm-router" in names:
        python = binaries.vllm_router.with_name("python")
        found.append("vllm-router " + _run_text([str(python), "-c", query, "vllm-router"]))
    if "nginx" in names:
        found.append(_run_text([str(binaries.nginx), "-v"]).removeprefix("nginx version: "))
    return ", ".join(found) or "-"
