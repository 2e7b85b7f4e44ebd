"""The command line: check, schema, and the demo a newcomer runs first."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import openai
import pytest

from gateway.commands.cli import main, policy_json_schema
from loadtests.kit.ports import free_port
from tests.support.processes import gateway_process, read_until
from tests.support.waiting import until_written

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "policies").glob("*.yaml"))
DEMO = ROOT / "gateway" / "defaults" / "demo.yaml"  # package data: the demo's policy


def test_there_are_examples() -> None:
    names = {p.name for p in EXAMPLES}
    assert {
        "single-vllm.yaml",
        "small-large-vllm.yaml",
        "mixed-vllm-tgi.yaml",
    } <= names


@pytest.mark.parametrize("path", [*EXAMPLES, DEMO], ids=lambda p: p.name)
def test_every_example_policy_compiles(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(path)]) == 0
    assert "ok, digest" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("backend", "said"),
    [
        ("url: 'http://h:8000'", "backend a http://h:8000: server root; API http://h:8000/v1"),
        (
            "url: 'https://h/v1', tls: {verify: false}",
            "backend a https://h/v1: API base; server root https://h (probes, metrics), "
            "API https://h/v1; TLS certificate not verified",
        ),
        (
            "discover: {dns: vllm, port: 8000}",
            "backend a http://vllm:8000: replicas: the addresses of vllm (port 8000), resolved "
            "every 5 s, at most 64; server root; API http://vllm:8000/v1",
        ),
    ],
)
def test_check_says_how_it_read_each_backend_url(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], backend: str, said: str
) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(
        f"backends:\n  - {{name: a, {backend}, model: m, pool: p}}\nmodels:\n  f: {{pool: p}}\n"
    )
    assert main(["check", str(path)]) == 0
    assert f"  {said}\n" in capsys.readouterr().out


def test_check_reports_file_field_and_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "backends:\n  - {name: a, url: 'http://x:1', model: m, pool: p, max_inflight: -3}\n"
        "models:\n  fast: {pool: q}\n"
    )
    assert main(["check", str(bad)]) == 1
    err = capsys.readouterr().err
    assert str(bad) in err
    assert "backends[0].max_inflight" in err
    assert "greater than or equal to 1" in err


def test_exported_schema_is_current() -> None:
    exported = json.loads((ROOT / "policies" / "schema.json").read_text())
    assert exported == json.loads(json.dumps(policy_json_schema())), (
        "policies/schema.json is stale: run `latency-gateway schema > policies/schema.json`"
    )


def test_demo_serves_the_simulated_fleet(tmp_path: Path) -> None:
    port = free_port()
    # From another directory: the demo needs no file of the checkout.
    with gateway_process(["demo", "--port", str(port), "--speed", "20"], cwd=tmp_path) as proc:
        read_until(proc, "demo is up")
        policy = Path(read_until(proc, "  policy ").split()[1])
        access_log = Path(read_until(proc, "  access log ").split()[2])
        read_until(proc, "Ctrl-C stops")
        # The banner comes just before uvicorn binds; the SDK's retries cover that gap.
        client = openai.OpenAI(
            base_url=f"http://127.0.0.1:{port}/v1", api_key="demo", max_retries=8
        )
        reply = client.chat.completions.create(
            model="smart", messages=[{"role": "user", "content": "Hi"}], max_tokens=5
        )
        assert reply.model == "smart"
        assert reply.usage is not None
        assert reply.usage.completion_tokens == 5
        assert sorted(m.id for m in client.models.list()) == ["auto", "fast", "smart"]
        children = subprocess.run(
            ["pgrep", "-P", str(proc.pid)], capture_output=True, text=True
        ).stdout.split()
        assert children, "the demo runs its fleet as a child process"
        # The access lines go to the file the banner named (written in batches), not to the
        # terminal.
        until_written(lambda: '"model":"smart"' in access_log.read_text())
        assert access_log.parent == policy.parent
    for pid in children:
        assert not Path(f"/proc/{pid}").exists(), "the demo left its fleet running"
    assert not policy.parent.exists(), "the demo left its temporary folder"


def test_a_second_demo_says_the_fleet_ports_are_taken(tmp_path: Path) -> None:
    with gateway_process(["demo", "--port", str(free_port()), "--speed", "20"]) as first:
        read_until(first, "Ctrl-C stops")
        second = subprocess.run(
            [sys.executable, "-m", "gateway", "demo", "--port", str(free_port())],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert second.returncode == 1
    assert "port 9101, 9102, 9201, 9202 of the simulated fleet is in use" in second.stderr


def test_version_and_help_texts(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out.startswith("latency-gateway 0.")
    for command in ("serve", "demo"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = capsys.readouterr().out
        assert "address to listen on" in text
        assert "port to listen on (default: 8080)" in text


def test_cache_curve_prints_the_shipped_curve(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cache-curve", "--points", "5"]) == 0
    out = capsys.readouterr().out
    assert "QQP train-split pairs held out" in out
    assert "(default)" in out
    assert "Cross-encoder" in out
    assert "P-CHR AUC" in out
    assert out.count("\n  0.") >= 5  # curve rows: threshold, precision, recall


def test_cache_curve_refuses_an_unreadable_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "v.npz").write_bytes(b"not a weights file")
    (tmp_path / "cut.npz").write_bytes(b"PK\x03\x04 cut short")
    for name in ("v.npz", "cut.npz", "missing.npz"):
        assert main(["cache-curve", "--verifier", str(tmp_path / name)]) == 1
        assert "cannot read the verifier" in capsys.readouterr().err
        assert main(["cache-curve", "--cross-encoder", str(tmp_path / name)]) == 1
        assert "cannot read the verifier" in capsys.readouterr().err
