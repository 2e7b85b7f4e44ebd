"""Logs and metrics hold no prompt text, gateway keys or upstream secrets.

``latency-gateway serve`` runs as its own process at DEBUG with tenants, an admin key and an
upstream key; requests go through every path that could leak (success, streaming, wrong and
missing keys, a refused model, input limits, an upstream failure, a refused reload), and
the process's whole output and ``/metrics`` are searched for the canaries. The session-wide
guard in ``tests/conftest.py`` does the same for the in-process servers of the whole run.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import pytest

from gateway.security.api_keys import hash_key
from loadtests.kit.fake_upstream import FakeLog
from loadtests.kit.ports import free_port
from tests.support.log_guard import leaked
from tests.support.policies import single_pool
from tests.support.processes import gateway_process, wait_ready
from tests.support.security import (
    ADMIN_KEY,
    CANARIES,
    PROMPT_CANARY,
    TENANT_A_KEY,
    TENANT_B_KEY,
    UPSTREAM_ENV,
    UPSTREAM_SECRET,
    WRONG_KEY,
    tenants_yaml,
)

PROMPT = [{"role": "user", "content": f"Tell me about {PROMPT_CANARY}"}]


@pytest.fixture
def served(
    upstream: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[str, subprocess.Popen[str], Path]]:
    monkeypatch.setenv(UPSTREAM_ENV, UPSTREAM_SECRET)  # the child inherits the environment
    policy = single_pool(upstream).replace(
        "    max_inflight: 32", f"    max_inflight: 32\n    api_key_env: {UPSTREAM_ENV}"
    )
    policy += tenants_yaml() + f'admin: {{mode: key, keys: ["{hash_key(ADMIN_KEY)}"]}}\n'
    policy += "limits: {max_message_chars: 200}\n"
    path = tmp_path / "policy.yaml"
    path.write_text(policy)
    port = free_port()
    args = ["serve", "--policy", str(path), "--port", str(port), "--log-level", "debug"]
    with gateway_process(args) as proc:
        url = f"http://127.0.0.1:{port}"
        wait_ready(url, proc)
        yield url, proc, path


def _exercise(url: str, path: Path) -> str:
    """Every leaky path once; returns the /metrics text."""
    good = {"authorization": f"Bearer {TENANT_A_KEY}"}
    with httpx.Client(base_url=url, timeout=10) as http:
        chat = {"model": "fast", "messages": PROMPT}
        assert http.post("/v1/chat/completions", json=chat, headers=good).status_code == 200
        streamed = http.post("/v1/chat/completions", json={**chat, "stream": True}, headers=good)
        assert streamed.status_code == 200
        completion = {"model": "fast", "prompt": PROMPT_CANARY}
        assert http.post("/v1/completions", json=completion, headers=good).status_code == 200
        wrong = {"authorization": f"Bearer {WRONG_KEY}"}
        assert http.post("/v1/chat/completions", json=chat, headers=wrong).status_code == 401
        assert http.post("/v1/chat/completions", json=chat).status_code == 401
        bravo = {"authorization": f"Bearer {TENANT_B_KEY}"}
        refused = http.post("/v1/chat/completions", json={**chat, "model": "auto"}, headers=bravo)
        assert refused.status_code == 403
        long = [{"role": "user", "content": PROMPT_CANARY * 20}]
        too_long = http.post("/v1/chat/completions", json={**chat, "messages": long}, headers=good)
        assert too_long.status_code == 400
        broken = {**chat, "fake": {"status": 500, "body": f"upstream saw {PROMPT_CANARY}"}}
        assert http.post("/v1/chat/completions", json=broken, headers=good).status_code >= 500
        bad_json = http.post("/v1/chat/completions", content=b'{"messages": [', headers=good)
        assert bad_json.status_code == 400
        path.write_text(path.read_text() + "\nnot: [valid\n")
        admin = {"authorization": f"Bearer {ADMIN_KEY}"}
        assert http.post("/admin/reload", headers=admin).status_code == 400
        assert http.post("/admin/reload", headers=wrong).status_code == 401
        shown = http.get("/admin/policy", headers=admin)
        assert not leaked([shown.text], [UPSTREAM_SECRET, *CANARIES[:3]])
        return http.get("/metrics").text


def test_logs_and_metrics_hold_no_prompts_keys_or_secrets(
    served: tuple[str, subprocess.Popen[str], Path], fake_log: FakeLog
) -> None:
    url, proc, path = served
    metrics = _exercise(url, path)
    assert fake_log.headers[0]["authorization"] == f"Bearer {UPSTREAM_SECRET}"
    proc.terminate()
    output, _ = proc.communicate(timeout=30)
    assert "policy reload refused" in output  # the log was captured, at DEBUG
    assert leaked([output], CANARIES) == []
    assert leaked([metrics], CANARIES) == []
