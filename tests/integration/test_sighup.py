"""SIGHUP reloads the policy of a running `latency-gateway serve` (a real process)."""

from __future__ import annotations

import signal
from pathlib import Path

import httpx2 as httpx

from loadtests.kit.ports import free_port
from tests.support.policies import single_pool
from tests.support.processes import gateway_process, read_until

QUIET = "server: {reload_poll_s: 3600}\n"  # only the signal may trigger a reload


def test_sighup_reloads_and_a_bad_edit_is_refused(upstream: str, tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(single_pool(upstream) + QUIET)
    port = free_port()
    with gateway_process(["serve", "--policy", str(path), "--port", str(port)]) as proc:
        read_until(proc, "Uvicorn running on")
        base = f"http://127.0.0.1:{port}"
        before = httpx.get(base + "/admin/policy").json()["digest"]

        path.write_text(single_pool(upstream) + "  smart: {pool: small}\n" + QUIET)
        proc.send_signal(signal.SIGHUP)
        read_until(proc, "policy swapped")
        after = httpx.get(base + "/admin/policy").json()["digest"]
        assert after != before

        path.write_text("backends: []\n")
        proc.send_signal(signal.SIGHUP)
        read_until(proc, "policy reload refused")
        assert httpx.get(base + "/admin/policy").json()["digest"] == after
        assert httpx.get(base + "/readyz").status_code == 200
