from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from loadtests.kit.serving import serve
from loadtests.loadgen.record import RequestRecord
from loadtests.loadgen.report import read_records, write_run_report
from loadtests.loadgen.sampler import Sample, parse_gauges, read_counters
from loadtests.loadgen.summary import SloThresholds, summarise
from loadtests.loadgen.timeline import in_flight_steps, peak_in_flight


def _records() -> list[RequestRecord]:
    out = []
    for i in range(10):
        out.append(
            RequestRecord(
                index=i,
                label="easy" if i % 2 else "hard",
                target="u",
                scheduled_s=i * 0.1,
                sent_s=i * 0.1,
                ttft_s=0.1 + i * 0.01,
                itl_s=[0.02] * 4,
                e2e_s=0.2 + i * 0.01,
                status=200,
                completion_tokens=5,
            )
        )
    out.append(
        RequestRecord(
            index=10,
            label="easy",
            target="u",
            scheduled_s=1.0,
            sent_s=1.0,
            e2e_s=0.01,
            status=429,
            error="http_429",
        )
    )
    out.append(
        RequestRecord(
            index=11,
            label="easy",
            target="u",
            scheduled_s=1.0,
            sent_s=1.1,
            e2e_s=0.5,
            error="timeout",
        )
    )
    return out


def test_summary_rates_and_slo() -> None:
    records = _records()
    summary = summarise(records, SloThresholds(ttft_ms=155, tpot_ms=30))
    assert summary["requests"] == 12
    assert summary["succeeded"] == 10
    assert summary["shed_rate"] == pytest.approx(1 / 12)
    assert summary["error_rate"] == pytest.approx(1 / 12)
    assert summary["errors"] == {"timeout": 1}
    assert summary["span_s"] == pytest.approx(1.6)
    # TTFT <= 150 ms holds for i = 0..5; TPOT = (e2e - ttft) / 4 = 25 ms for all.
    assert summary["goodput_rps"] == pytest.approx(6 / 1.6)
    assert summary["ttft_ms"]["p50"] == pytest.approx(145.0)
    assert summary["tpot_ms"]["p99"] == pytest.approx(25.0)
    assert set(summary["by_label"]) == {"easy", "hard"}


def test_in_flight_steps() -> None:
    records = _records()[:3]  # [0, .2], [.1, .31], [.2, .42]
    steps = in_flight_steps(records)
    assert steps[0] == (0.0, 0)
    assert steps[-1][1] == 0
    assert peak_in_flight(records) == 2  # the first ends exactly when the third starts


def test_parse_gauges_sums_series() -> None:
    text = '# HELP x\nvllm:num_requests_waiting{m="a"} 2\nvllm:num_requests_waiting 1.5\nother 9\n'
    assert parse_gauges(text, ["vllm:num_requests_waiting", "absent"]) == {
        "vllm:num_requests_waiting": 3.5
    }


def test_reports_written(tmp_path: Path) -> None:
    records = _records()
    summary = summarise(records, SloThresholds(ttft_ms=150))
    samples = [Sample(0.5, "m", "vllm:num_requests_waiting", 2.0)]
    paths = write_run_report(tmp_path, records, samples, summary, {"workload": "w"})
    names = {p.name for p in paths}
    assert names == {
        "records.jsonl",
        "samples.jsonl",
        "summary.json",
        "report.md",
        "ttft_cdf.png",
        "timeline.png",
    }
    for path in paths:
        assert path.stat().st_size > 0
    assert (tmp_path / "ttft_cdf.png").read_bytes()[:4] == b"\x89PNG"
    data = orjson.loads((tmp_path / "summary.json").read_bytes())
    assert data["summary"]["requests"] == 12
    markdown = (tmp_path / "report.md").read_text()
    assert "| ttft_ms |" in markdown
    assert "## By request class" in markdown
    assert read_records(tmp_path / "records.jsonl") == records


def test_read_counters_sums_over_endpoints() -> None:
    texts = {
        "a": 'vllm:prefix_cache_hits_total{model_name="m"} 30\n'
        "vllm:prefix_cache_queries_total 100\n",
        "b": "vllm:prefix_cache_hits_total 10\nvllm:prefix_cache_queries_total 50\n",
    }

    async def metrics(request: Request) -> PlainTextResponse:
        return PlainTextResponse(texts[request.path_params["name"]])

    app = Starlette(routes=[Route("/{name}", metrics)])

    names = ("vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total", "absent")
    with serve(app) as url:
        got = read_counters([url + "/a", url + "/b"], names)
    assert got == {names[0]: 40.0, names[1]: 150.0, "absent": 0.0}
