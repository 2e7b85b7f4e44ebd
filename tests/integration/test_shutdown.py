"""SIGTERM drains: in-flight streams finish within the drain timeout, the rest are cut and
their upstream work cancelled."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx2 as httpx

from loadtests.kit.fake_upstream import FakeLog
from loadtests.kit.ports import free_port
from tests.support.policies import single_pool
from tests.support.processes import gateway_process, read_until


@contextmanager
def _gateway(policy: str, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    path = tmp_path / "policy.yaml"
    path.write_text(policy)
    port = free_port()
    with gateway_process(["serve", "--policy", str(path), "--port", str(port)]) as proc:
        read_until(proc, "Uvicorn running on")
        yield proc, f"http://127.0.0.1:{port}"


def _stream_lines(base: str, fake: dict[str, object]) -> Iterator[str]:
    body = {
        "model": "fast",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "fake": fake,
    }
    with httpx.stream("POST", base + "/v1/chat/completions", json=body, timeout=30) as response:
        yield from response.iter_lines()


def test_sigterm_lets_a_stream_finish_within_the_drain(upstream: str, tmp_path: Path) -> None:
    policy = single_pool(upstream) + "server: {drain_timeout_s: 10}\n"
    with _gateway(policy, tmp_path) as (proc, base):
        lines = _stream_lines(base, {"tokens": 8, "itl_s": 0.1})
        first = next(line for line in lines if line.startswith("data: "))
        proc.send_signal(signal.SIGTERM)
        rest = [line for line in lines if line.startswith("data: ")]
        # uvicorn re-raises SIGTERM once drained, so the exit is "killed by SIGTERM".
        assert proc.wait(timeout=15) in (0, -signal.SIGTERM)
    assert "tok0" in first
    assert rest[-1] == "data: [DONE]"
    assert sum("tok" in line for line in rest) == 7


def test_sigterm_cuts_streams_past_the_drain_and_cancels_upstream(
    upstream: str, fake_log: FakeLog, tmp_path: Path
) -> None:
    policy = single_pool(upstream) + "server: {drain_timeout_s: 1}\n"
    with _gateway(policy, tmp_path) as (proc, base):
        lines = _stream_lines(base, {"tokens": 200, "itl_s": 0.1})
        next(line for line in lines if line.startswith("data: "))
        proc.send_signal(signal.SIGTERM)
        rest = list(lines)
        proc.wait(timeout=15)
    events = [line for line in rest if line.startswith("data: ")]
    assert "data: [DONE]" not in events  # cut short: never mistaken for a whole answer
    assert '"code":"shutting_down"' in events[-1]
    assert len([line for line in events if "tok" in line]) < 50
    assert fake_log.left.wait(timeout=5), "the upstream kept generating after the gateway left"
