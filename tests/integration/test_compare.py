"""``python -m loadtests.compare`` end to end: a real simulated fleet and a real gateway.

One small replica at 20x simulated speed, a few seconds of a shipped workload at a low rate,
direct then through ``latency-gateway serve`` (both started as child processes by the runner).
"""

from __future__ import annotations

import contextlib
import math
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest

from gateway.children import running
from loadtests.compare import cli as compare
from loadtests.compare import runs
from loadtests.kit.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
WORKLOAD = ROOT / "loadtests" / "workloads" / "easy_hard_mix.yaml"
FLEET = """\
speed: 20
host: 127.0.0.1
groups:
  - name: small
    profile: qwen2.5-1.5b-h100
    engine: vllm
    served_model: Qwen/Qwen2.5-1.5B-Instruct
    replicas: 1
    base_port: {port}
"""


def _sessions_alive(session_ids: set[int]) -> list[int]:
    """Processes still alive in any of these sessions (each child leads its own session)."""
    alive = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            state, session = fields[0], int(fields[3])
            if session in session_ids and state != "Z":
                alive.append(int(stat.parent.name))
    return alive


@pytest.mark.timeout(90)
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_compare_runs_direct_and_gateway(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    children: list[int] = []

    @contextlib.contextmanager
    def spied(
        argv: Sequence[str], health_urls: Sequence[str], log_path: Path, **kw: Any
    ) -> Iterator[subprocess.Popen[bytes]]:
        with running(argv, health_urls, log_path, **kw) as proc:
            children.append(proc.pid)
            yield proc

    monkeypatch.setattr(runs, "running", spied)
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(FLEET.format(port=free_port()))
    out = tmp_path / "out"
    argv = ["--fleet", str(fleet), "--workload", str(WORKLOAD), "--out", str(out)]
    argv += ["--gateway-port", str(free_port()), "--rate", "3", "--duration", "3"]
    assert compare.main([*argv, "--no-plots", "--startup-timeout", "30"]) == 0

    assert len(children) == 3  # fleet (direct), fleet + gateway (gateway run)
    assert _sessions_alive(set(children)) == []
    report = orjson.loads((out / "comparison.json").read_bytes())
    for mode in ("direct", "gateway"):
        summary = report["summaries"][mode]
        assert summary["succeeded"] > 0, mode
        assert summary["succeeded"] == summary["requests"], mode
        assert summary["error_rate"] == 0.0, mode
    backends = report["summaries"]["gateway"]["gateway_headers"]["x-gateway-backend"]
    assert set(backends) == {"small-0"}
    ratios = {row["metric"]: row["ratio"] for row in report["ratios"]}
    for metric, value in ratios.items():
        if metric in ("error rate", "shed rate"):  # 0 / 0 on a healthy run
            assert value is None, metric
        else:
            assert isinstance(value, float), metric
            assert math.isfinite(value), metric
            assert value > 0, metric
    markdown = (out / "comparison.md").read_text()
    assert "# Gateway vs direct: easy_hard_mix" in markdown
    assert "| TTFT p50 |" in markdown
    assert "| TTFT p50 |" in capsys.readouterr().out
