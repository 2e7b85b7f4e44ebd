"""Shared pieces of the deploy files' tests: where the files are, the real tools that check
them, and what the code says (routes, metrics, the command line) to compare them with."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from prometheus_client import CollectorRegistry

from gateway.app import build_app
from gateway.commands.cli import command_line
from gateway.metrics import GatewayMetrics
from gateway.policy.compile import CompiledPolicy

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


def tool(name: str) -> str:
    """A command-line tool: the venv's own (pip-installed) first, then PATH. CI installs each
    (.ci/test); a missing one fails the test rather than skipping it."""
    here = Path(sys.executable).parent / name
    found = str(here) if here.exists() else shutil.which(name)
    assert found is not None, f"{name} is not installed (see .ci/test)"
    return found


def run(*argv: str, cwd: Path = ROOT) -> str:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{' '.join(argv)} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def yaml_file(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def serve_args(argv: list[str]) -> argparse.Namespace:
    """A container's ``latency-gateway`` arguments as the real CLI reads them."""
    args = command_line(argv)
    assert args.func.__name__ == "_serve", argv
    return args


def app_paths(policy: CompiledPolicy) -> set[str]:
    """Every path the gateway's app serves."""
    return {getattr(route, "path", "") for route in build_app(policy).routes}


def gauge_names() -> set[str]:
    registry = CollectorRegistry()
    GatewayMetrics(registry)
    return {family.name for family in registry.collect() if family.type == "gauge"}
