"""The API contract, checked by a fuzzer nobody here wrote: Schemathesis against a real gateway
process (``latency-gateway serve``) over the simulated fleet (``python -m loadtests.sim``).

Schemathesis reads the gateway's own ``/openapi.json`` and runs all four of its phases
(examples, coverage, fuzzing, and the stateful phase, which follows the document's links from
``GET /v1/models`` to every operation that takes a model) with every one of its checks and
two of ours (``tests/support/contract_checks.py``), a fixed seed and a bounded number of
examples per operation; any failure, error or warning fails the test, and its report is the
assertion message. Its settings are in ``schemathesis.toml`` beside this file.

The policy is the demo's shape (a small and a large vLLM pool, ``fast``/``smart``/``auto``,
vLLM's own routes on every backend) with input limits that fit the simulated models: what the
document allows, the backends can serve (16 messages of 4,000 characters and 256 output
tokens fit a 32,768-token context; 4,096 embedding dimensions are the simulator's most).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import pytest

from gateway.children import running
from loadtests.kit.ports import free_port
from tests.integration.conftest import GatewayFactory
from tests.support.policies import single_pool
from tests.support.processes import gateway_process, wait_ready

ROOT = Path(__file__).resolve().parents[2]
CONFIG = Path(__file__).with_name("schemathesis.toml")
SEED = 20261127
EXAMPLES = 30  # per operation and phase: 50 to 75 s for the whole run here

FLEET = """\
speed: 20
host: 127.0.0.1
groups:
  - {{name: small, profile: qwen2.5-1.5b-h100, engine: vllm,
     served_model: Qwen/Qwen2.5-1.5B-Instruct, replicas: 1, base_port: {small}}}
  - {{name: large, profile: llama-3.1-70b-4xh100, engine: vllm,
     served_model: meta-llama/Llama-3.1-70B-Instruct, replicas: 1, base_port: {large}}}
"""
POLICY = """\
backends:
  - {{name: small-0, url: "http://127.0.0.1:{small}", engine: vllm, pool: small,
     model: Qwen/Qwen2.5-1.5B-Instruct, extra_routes: [tokenize, detokenize, rerank, score]}}
  - {{name: large-0, url: "http://127.0.0.1:{large}", engine: vllm, pool: large,
     model: meta-llama/Llama-3.1-70B-Instruct,
     extra_routes: [tokenize, detokenize, rerank, score]}}
models:
  fast: {{pool: small}}
  smart: {{pool: large}}
  auto: {{route: auto}}
routing: {{default_pool: small, auto: {{small: small, large: large}}}}
classify: {{model: {{enabled: false}}}}
health: {{interval_s: 1}}
limits:
  max_messages: 16
  max_message_chars: 4000
  max_tokens: 256
  max_tokens_action: refuse
  max_dimensions: 4096
"""


@pytest.fixture
def contract_gateway(tmp_path: Path) -> Iterator[str]:
    small, large, port = free_port(), free_port(), free_port()
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(FLEET.format(small=small, large=large))
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY.format(small=small, large=large))
    argv = [sys.executable, "-m", "loadtests.sim", "--fleet", str(fleet)]
    health = [f"http://127.0.0.1:{p}/health" for p in (small, large)]
    with running(argv, health, tmp_path / "fleet.log"):
        args = ["serve", "--policy", str(policy), "--port", str(port), "--log-level", "warning"]
        with gateway_process(args) as proc:
            url = f"http://127.0.0.1:{port}"
            wait_ready(url, proc)
            yield url


def schemathesis(url: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "schemathesis.cli", "--config-file", str(CONFIG)]
    command += ["--no-color", "run", url + "/openapi.json", "--checks", "all"]
    command += ["--seed", str(SEED), "--max-examples", str(EXAMPLES), "--workers", "1"]
    command += ["--generation-database", "none", "--report", "json"]
    command += ["--report-json-path", str(cwd / "report.json")]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # the hooks module: tests.support
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=540)


@pytest.mark.timeout(600)
def test_schemathesis_finds_nothing(contract_gateway: str, tmp_path: Path) -> None:
    result = schemathesis(contract_gateway, tmp_path)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-30_000:]
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["complete"], report["stop_reason"]
    assert report["failures"] == []
    assert report["errors"] == []
    assert not any(report["warnings"].values()), report["warnings"]
    assert report["test_cases"]["with_failures"] == 0
    # Every operation of the document was tested (but the document's own: Schemathesis
    # leaves out the schema it reads), in every phase.
    document = httpx.get(contract_gateway + "/openapi.json").json()
    operations = {
        f"{method.upper()} {path}"
        for path, item in document["paths"].items()
        for method in item
        if path != "/openapi.json"
    }
    counts = report["operations"]
    assert counts["total"] == counts["selected"] == counts["tested"] == len(operations), counts
    assert set(report["valid_rates"]) == operations
    assert {name: phase["status"] for name, phase in report["phases"].items()} == dict.fromkeys(
        ("examples", "coverage", "fuzzing", "stateful"), "success"
    )
    # The stateful phase followed every link from GET /v1/models.
    links = len(document["paths"]["/v1/models"]["get"]["responses"]["200"]["links"])
    assert f"API Links:    {links} covered / {links} selected / {links} total" in out, out
    assert report["test_cases"]["generated"] >= 1000


def test_the_document_follows_a_reload(
    upstream: str, start_gateway: GatewayFactory, tmp_path: Path
) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(single_pool(upstream, extra="limits: {max_n: 4}\n"))
    with start_gateway(path=path) as url, httpx.Client(base_url=url) as http:
        before = http.get("/openapi.json").json()
        assert before == http.get("/openapi.json").json()  # the same, built once
        n = before["components"]["schemas"]["ChatRequest"]["properties"]["n"]["anyOf"][0]
        assert n["maximum"] == 4
        path.write_text(single_pool(upstream, extra="  smart: {pool: small}\nlimits: {max_n: 2}\n"))
        assert http.post("/admin/reload").json()["status"] == "reloaded"
        after = http.get("/openapi.json").json()
        n = after["components"]["schemas"]["ChatRequest"]["properties"]["n"]["anyOf"][0]
        assert n["maximum"] == 2
        model = after["components"]["schemas"]["ChatRequest"]["properties"]["model"]
        assert model["examples"] == ["auto", "fast", "smart"]
        refused = http.post("/v1/chat/completions", json={**_CHAT, "n": 3})
        assert refused.json()["error"]["code"] == "n_too_large"


_CHAT = {"model": "fast", "messages": [{"role": "user", "content": "hi"}]}


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("TRACE", "/v1/models", "GET, HEAD"),
        ("GET", "/v1/chat/completions", "POST"),
        ("PUT", "/v1/models/fast", "GET, HEAD"),
        ("DELETE", "/admin/reload", "POST"),
    ],
)
def test_a_405_says_which_methods_the_resource_takes(
    gateway: str, method: str, path: str, allow: str
) -> None:
    response = httpx.request(method, gateway + path)
    assert response.status_code == 405
    assert response.headers["allow"] == allow
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert f"allowed: {allow}" in error["message"]
