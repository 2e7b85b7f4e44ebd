"""Health, readiness, metrics, models, and the admin endpoints with hot reload."""

from __future__ import annotations

from pathlib import Path

import httpx2 as httpx
import openai
import pytest

from tests.integration.conftest import GatewayFactory
from tests.support.policies import single_pool


def test_healthz_readyz_and_metrics(gateway: str) -> None:
    with httpx.Client(base_url=gateway) as http:
        assert http.get("/healthz").json() == {"status": "ok"}
        assert http.get("/readyz").json() == {"status": "ready", "pools": {"small": True}}
        body = {"model": "fast", "messages": [{"role": "user", "content": "hi"}]}
        assert http.post("/v1/chat/completions", json=body).status_code == 200
        assert http.post("/v1/chat/completions", json={**body, "model": "x"}).status_code == 404
        text = http.get("/metrics").text
    assert (
        'gateway_requests_total{backend="small-0",cache="bypass",model="fast",pool="small",'
        'status="200"} 1.0' in text
    )
    assert 'gateway_client_errors_total{status="404",type="invalid_request_error"} 1.0' in text
    assert 'gateway_backend_healthy{backend="small-0",pool="small"} 1.0' in text
    assert "gateway_time_to_first_token_seconds_bucket" in text


def test_reload_swaps_policy_and_refuses_broken_edit(
    upstream: str, start_gateway: GatewayFactory, tmp_path: Path
) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(single_pool(upstream))
    with start_gateway(path=path) as url, httpx.Client(base_url=url) as http:
        before = http.get("/admin/policy").json()
        assert before["path"] == str(path)

        path.write_text(single_pool(upstream) + "  smart: {pool: small}\n")
        reloaded = http.post("/admin/reload").json()
        assert reloaded["status"] == "reloaded"
        assert reloaded["digest"] != before["digest"]
        client = openai.OpenAI(base_url=url + "/v1", api_key="x", max_retries=0)
        assert "smart" in {m.id for m in client.models.list()}

        path.write_text(single_pool(upstream) + "  smart: {pool: nowhere}\n")
        refused = http.post("/admin/reload")
        assert refused.status_code == 400
        assert "models.smart.pool" in refused.json()["error"]["message"]
        assert http.get("/admin/policy").json()["digest"] == reloaded["digest"]
        assert "smart" in {m.id for m in client.models.list()}
        metrics = http.get("/metrics").text
    assert 'gateway_policy_reloads_total{result="success"} 1.0' in metrics
    assert 'gateway_policy_reloads_total{result="failure"} 1.0' in metrics


def test_inflight_stream_finishes_on_its_policy(
    upstream: str, start_gateway: GatewayFactory, tmp_path: Path
) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(single_pool(upstream))
    body = {
        "model": "fast",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "fake": {"tokens": 3, "itl_s": 0.05},
    }
    with start_gateway(path=path) as url, httpx.Client(base_url=url, timeout=10) as http:
        with http.stream("POST", "/v1/chat/completions", json=body) as response:
            lines = response.iter_lines()
            first = next(line for line in lines if line.startswith("data: "))
            path.write_text(single_pool(upstream).replace("fast:", "quick:"))
            assert http.post("/admin/reload").json()["status"] == "reloaded"
            rest = [line for line in lines if line.startswith("data: ")]
        assert '"model":"fast"' in first
        assert rest[-1] == "data: [DONE]"
        assert all('"model":"fast"' in line for line in rest[:-1])
        assert http.post("/v1/chat/completions", json={**body, "stream": False}).status_code == 404


def test_dashboard_data_carries_the_history(gateway: str) -> None:
    with httpx.Client(base_url=gateway) as http:
        data = http.get("/dashboard/data").json()
        ahead = data["history"]["now"] + 3600  # no point can be newer
        later = http.get("/dashboard/data", params={"since": ahead}).json()
        refused = {
            raw: http.get("/dashboard/data", params={"since": raw})
            for raw in ("abc", "nan", "inf", "", "1e999")
        }
    history = data["history"]
    assert (history["interval_s"], history["horizon_s"]) == (5.0, 900.0)
    assert isinstance(history["points"], list)
    assert later["history"]["points"] == []
    assert later["history"]["now"] >= history["now"]
    for raw, response in refused.items():
        assert response.status_code == 400, raw
        error = response.json()["error"]
        assert (error["type"], error["param"]) == ("invalid_request_error", "since")


def test_the_dashboard_table_is_the_charts_last_point(gateway: str) -> None:
    """The pools' rates and percentiles in the table are the live point the charts end on
    (the same windows, read at the same moment), so they cannot disagree."""
    with httpx.Client(base_url=gateway) as http:
        body = {"model": "fast", "messages": [{"role": "user", "content": "hi"}]}
        for _ in range(3):
            assert http.post("/v1/chat/completions", json=body).status_code == 200
        data = http.get("/dashboard/data").json()
    live = data["history"]["live"]
    assert live is not None  # the lifespan's sampler kept a first reading at start
    [row] = data["pools"]
    point = live["pools"]["small"]
    assert point["admitted_per_s"] > 0  # the chart's figures are rounded to 1 ms / 0.001
    assert row["admitted_per_s"] == pytest.approx(point["admitted_per_s"], abs=1e-3)
    assert row["shed_per_s"] == pytest.approx(sum(point["shed_per_s"].values()), abs=1e-3)
    assert row["ttft_p99_ms"] == pytest.approx(point["observed_p99_s"] * 1000, abs=1)
