from __future__ import annotations

import math
import sys
from pathlib import Path

import orjson
import pytest

from gateway.children import StartupError, running
from loadtests.loadgen.cli import main as loadgen_main
from loadtests.loadgen.comparison import ratio_rows, ratio_table, write_comparison
from loadtests.loadgen.fleet import policy_for, replicas
from loadtests.loadgen.session import direct_targets, parse_pairs
from loadtests.sim.fleet import FleetConfig

FLEET = {
    "speed": 1.0,
    "host": "127.0.0.1",
    "groups": [
        {"name": "small", "profile": "p", "engine": "vllm", "served_model": "S",
         "replicas": 2, "base_port": 9001},
        {"name": "large", "profile": "q", "engine": "tgi", "served_model": "L",
         "replicas": 1, "base_port": 9101},
    ],
}  # fmt: skip


def test_policy_from_fleet() -> None:
    fleet = FleetConfig.model_validate(FLEET)
    assert [r.url for r in replicas(fleet)] == [
        "http://127.0.0.1:9001",
        "http://127.0.0.1:9002",
        "http://127.0.0.1:9101",
    ]
    policy = policy_for(fleet)
    assert [b["name"] for b in policy["backends"]] == ["small-0", "small-1", "large-0"]
    assert policy["backends"][2] == {
        "name": "large-0", "url": "http://127.0.0.1:9101", "engine": "tgi", "model": "L",
        "pool": "large", "max_inflight": 32,
    }  # fmt: skip
    assert policy["models"] == {
        "small": {"pool": "small"},
        "large": {"pool": "large"},
        "auto": {"route": "auto"},
    }


def test_fleet_without_fixed_ports_is_rejected() -> None:
    fleet = FleetConfig.model_validate(FLEET)
    any_port = fleet.groups[1].model_copy(update={"base_port": 0})
    fleet = fleet.model_copy(update={"groups": [fleet.groups[0], any_port]})
    with pytest.raises(ValueError, match="'large': base_port 0"):
        policy_for(fleet)


def _summary(ttft: float, goodput: float, errors: float) -> dict[str, object]:
    pct = {"p50": ttft, "p95": ttft, "p99": ttft * 2}
    return {
        "ttft_ms": pct, "tpot_ms": pct, "e2e_ms": pct, "goodput_rps": goodput,
        "throughput_rps": goodput, "error_rate": errors, "shed_rate": 0.0,
    }  # fmt: skip


def test_ratios_and_report(tmp_path: Path) -> None:
    rows = ratio_rows(_summary(100.0, 2.0, 0.0), _summary(50.0, 3.0, 0.1))
    by_name = {r["metric"]: r["ratio"] for r in rows}
    assert by_name["TTFT p50"] == pytest.approx(0.5)
    assert by_name["TTFT p99"] == pytest.approx(0.5)
    assert by_name["goodput"] == pytest.approx(1.5)
    assert by_name["error rate"] == math.inf
    assert by_name["shed rate"] is None
    assert "| TTFT p50 | 100.0 | 50.0 | 0.500 | lower |" in ratio_table(rows)
    paths = write_comparison(tmp_path, rows, {"workload": "w"}, {"direct": {}, "gateway": {}})
    assert orjson.loads(paths[0].read_bytes())["ratios"][0]["metric"] == "TTFT p50"
    assert "gateway/direct" in paths[1].read_text()


def test_pairs_parsing() -> None:
    assert parse_pairs("fast=small, smart=large") == {"fast": "small", "smart": "large"}
    targets = direct_targets("http://a:1=org/m=1,http://b:2=n")
    assert [(t.base_url, t.model) for t in targets] == [
        ("http://a:1=org/m", "1"),
        ("http://b:2", "n"),
    ]
    with pytest.raises(ValueError, match="KEY=VALUE"):
        parse_pairs("oops")


def test_child_that_dies_is_reported(tmp_path: Path) -> None:
    argv = [sys.executable, "-c", "raise SystemExit(3)"]
    with (
        pytest.raises(StartupError, match="exited with 3"),
        running(argv, ["http://127.0.0.1:9/health"], tmp_path / "log"),
    ):
        pass


def test_dry_run_prints_plan(workloads_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--workload", str(workloads_dir / "easy_hard_mix.yaml"), "--requests", "5"]
    assert loadgen_main([*argv, "--dry-run", "--model-map", "auto=small"]) == 0
    rows = [orjson.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == 5
    assert {r["model"] for r in rows} == {"small"}
    assert all(r["stream"] for r in rows)


def test_cli_run_writes_reports(fake_url: str, tmp_path: Path, workloads_dir: Path) -> None:
    trace = tmp_path / "t.jsonl"
    rows = [{"t": i * 0.01, "model": "ok", "messages": [{"role": "user", "content": "x"}],
             "max_tokens": 3} for i in range(5)]  # fmt: skip
    trace.write_bytes(b"\n".join(orjson.dumps(r) for r in rows))
    (tmp_path / "w.yaml").write_text("name: tr\narrival: {kind: trace, path: t.jsonl}\n")
    out = tmp_path / "out"
    argv = ["--workload", str(tmp_path / "w.yaml"), "--base-url", fake_url, "--out", str(out)]
    assert loadgen_main([*argv, "--duration", "5", "--slo-ttft-ms", "5000"]) == 0
    summary = orjson.loads((out / "summary.json").read_bytes())["summary"]
    assert summary["succeeded"] == 5
    assert (out / "timeline.png").exists()
