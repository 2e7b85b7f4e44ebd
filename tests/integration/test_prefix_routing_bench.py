"""``python -m loadtests.prefix_routing`` end to end on a tiny fast fleet: it runs, reads the
replicas' prefix-cache counters and writes its report (the figures themselves are the
benchmark's business, not this test's)."""

from __future__ import annotations

import socket
from pathlib import Path

import orjson
import pytest

from loadtests.kit.ports import free_port
from loadtests.prefix_routing import cli as prefix_routing

FLEET = """\
speed: 20
host: 127.0.0.1
groups:
  - name: gpu
    profile: qwen2.5-1.5b-h100
    engine: vllm
    served_model: Qwen/Qwen2.5-1.5B-Instruct
    replicas: 2
    base_port: {port}
"""


def _free_ports(n: int) -> int:
    """A base port with ``n`` free ports after it (checked, not reserved)."""
    for _ in range(50):
        base = free_port()
        if base + n < 65535 and all(_free(base + i) for i in range(n)):
            return base
    raise RuntimeError("no run of free ports")


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@pytest.mark.timeout(120)
def test_bench_runs_and_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(FLEET.format(port=_free_ports(2)))
    out = tmp_path / "out"
    argv = ["--fleet", str(fleet), "--out", str(out), "--runs", "round_robin,spread_on"]
    argv += ["--rate", "4", "--duration", "3", "--gateway-port", str(free_port())]
    assert prefix_routing.main(argv) == 0

    rows = orjson.loads((out / "summary.json").read_bytes())
    assert set(rows) == {"round_robin", "spread_on"}
    for row in rows.values():
        assert row["requests"] > 0
        assert row["error_rate"] == 0.0
        assert 0.0 <= row["prefix_hit_rate"] <= 1.0
        served = row["served_per_replica"]
        assert row["busiest_share"] == max(served) / sum(served)
    report = (out / "report.md").read_text()
    assert "| round_robin | tenant_prefix |" in report
    assert "| spread_on | tenant_spread |" in report
    assert "prefix hit rate | busiest replica" in capsys.readouterr().out
