"""The idle demo stops promptly: ``latency-gateway demo`` as a real process (the simulated
fleet and the gateway, started from another directory on a free port), ready and answering,
then Ctrl-C (SIGINT) or SIGTERM. It must exit, fleet and all, well within the bound; the
bound is generous (5 s) because this machine is shared, while the demo itself aims at 2 s
(idle, it measures about half a second here). The measured time is printed (``-s``)."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from loadtests.kit.ports import free_port
from tests.support.processes import gateway_process, read_until, wait_ready

BOUND_S = 5.0


@pytest.mark.parametrize(
    ("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["ctrl-c", "sigterm"]
)
def test_the_idle_demo_stops_within_the_bound(
    tmp_path: Path, sig: signal.Signals, code: int
) -> None:
    port = free_port()
    with gateway_process(["demo", "--port", str(port)], cwd=tmp_path) as proc:
        read_until(proc, "Ctrl-C stops")
        wait_ready(f"http://127.0.0.1:{port}", proc)
        fleet = subprocess.run(
            ["pgrep", "-P", str(proc.pid)], capture_output=True, text=True
        ).stdout.split()
        assert fleet, "the demo runs its fleet as a child process"
        sent = time.monotonic()
        proc.send_signal(sig)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail("the demo did not stop within 30 s")
        took = time.monotonic() - sent
        assert proc.stdout is not None
        said = proc.stdout.read()
    print(f"demo stopped {took:.2f} s after {sig.name}")
    assert took < BOUND_S, f"the demo took {took:.2f} s to stop after {sig.name}"
    assert proc.returncode == code
    assert "Traceback" not in said, said
    assert ("demo stopped" in said) is (sig is signal.SIGINT)
    for pid in fleet:
        assert not Path(f"/proc/{pid}").exists(), "the demo left its fleet running"
