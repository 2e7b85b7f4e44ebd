"""``latency-gateway serve`` in one process stops on Ctrl-C as the demo does: after its
drain, exit 130, no traceback (uvicorn re-raises the signal once it has shut down)."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest

from loadtests.kit.fake_upstream import FakeConfig, build_fake
from loadtests.kit.ports import free_port
from tests.support.processes import gateway_process, wait_ready
from tests.support.servers import serve


def _policy(upstream: str) -> str:
    return f"""
backends:
  - {{name: b0, url: "{upstream}", engine: openai, model: fake-model, pool: main}}
models:
  m: {{pool: main}}
server: {{drain_timeout_s: 1}}
"""


def test_one_process_stops_on_ctrl_c_without_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    port = free_port()
    with serve(build_fake(FakeConfig())) as upstream:
        path.write_text(_policy(upstream))
        with gateway_process(["serve", "--policy", str(path), "--port", str(port)]) as proc:
            wait_ready(f"http://127.0.0.1:{port}", proc)
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pytest.fail("serve did not stop within 30 s of Ctrl-C")
            assert proc.stdout is not None
            said = proc.stdout.read()
    assert proc.returncode == 130
    assert "Traceback" not in said, said
