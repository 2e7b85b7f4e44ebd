"""SIGHUP reloads the policy of a running `latency-gateway serve` (a real process)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx2 as httpx

from tests.support.policies import single_pool

QUIET = "server: {reload_poll_s: 3600}\n"  # only the signal may trigger a reload


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _read_until(proc: subprocess.Popen[str], marker: str) -> str:
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if marker in line:
            return line
    raise AssertionError(f"{marker!r} never logged; output:\n{''.join(seen)}")


def test_sighup_reloads_and_a_bad_edit_is_refused(upstream: str, tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(single_pool(upstream) + QUIET)
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "gateway", "serve", "--policy", str(path), "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        _read_until(proc, "Application startup complete")
        base = f"http://127.0.0.1:{port}"
        before = httpx.get(base + "/admin/policy").json()["digest"]

        path.write_text(single_pool(upstream) + "  smart: {pool: small}\n" + QUIET)
        proc.send_signal(signal.SIGHUP)
        _read_until(proc, "policy swapped")
        after = httpx.get(base + "/admin/policy").json()["digest"]
        assert after != before

        path.write_text("backends: []\n")
        proc.send_signal(signal.SIGHUP)
        _read_until(proc, "policy reload refused")
        assert httpx.get(base + "/admin/policy").json()["digest"] == after
        assert httpx.get(base + "/readyz").status_code == 200
    finally:
        proc.terminate()
        proc.wait(timeout=15)
