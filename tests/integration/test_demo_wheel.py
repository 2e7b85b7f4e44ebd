"""The demo from an installed wheel: built from the package sources alone, installed into a
directory of its own, run from an empty directory, stopped with SIGTERM.

The wheel is built offline (``pip wheel --no-deps --no-build-isolation``) from a copy of
pyproject.toml, README.md, gateway/ and loadtests/, so a data file that package-data misses
cannot be found in the checkout instead; the dependencies come from the test's environment.

The lean install: the same wheel into a fresh virtual environment with its dependencies
resolved by pip (from the package index, or pip's cache), without the ``semantic`` extra: no
torch, sentence-transformers or FAISS, and the demo, a request routed by ``auto`` and
``check`` work; a policy that turns on the semantic cache is refused, naming the extra.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import openai

from loadtests.kit.ports import free_port
from tests.support.processes import read_until

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("pyproject.toml", "README.md", "gateway", "loadtests")

# Scores 0.78 with the demo policy (its difficulty split sends 0.70 and up to large).
HARD = (
    "Tom has twice as many marbles as Jerry. Together they have 45 marbles, and Tom gives "
    "Jerry 5. How many marbles does each have now?"
)


def _build_wheel(tmp: Path) -> Path:
    src = tmp / "src"
    src.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / name, src / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    wheels = tmp / "wheels"
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(src)],
        check=True,
        timeout=300,
    )
    [wheel] = wheels.glob("latency_gateway-*.whl")
    shutil.rmtree(src)  # nothing of the sources is left to fall back on
    return wheel


def _build_and_install(tmp: Path) -> Path:
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    wheel = _build_wheel(tmp)
    target = tmp / "site"
    subprocess.run([*pip, "install", "--no-deps", "--target", str(target), str(wheel)], check=True)
    return target


def test_demo_runs_from_an_installed_wheel_and_stops_on_sigterm(tmp_path: Path) -> None:
    site = _build_and_install(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site), "PYTHONUNBUFFERED": "1"}
    where = subprocess.run(
        [sys.executable, "-c", "import gateway, loadtests.sim; print(gateway.__file__)"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert where.startswith(str(site)), where  # the wheel's copy, not the checkout's
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "gateway", "demo", "--port", str(port), "--speed", "20"],
        cwd=elsewhere,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        read_until(proc, "demo is up")
        assert "-> large, else -> small" in read_until(proc, "else -> small")
        fitted = read_until(proc, "fitted on")  # what the split's score is fitted on
        assert "RouteLLM's MMLU and GSM8K outcomes" in fitted
        read_until(proc, "Ctrl-C stops")
        client = openai.OpenAI(
            base_url=f"http://127.0.0.1:{port}/v1", api_key="demo", max_retries=8
        )
        hard = client.chat.completions.with_raw_response.create(
            model="auto",
            messages=[{"role": "user", "content": HARD}],
            max_tokens=5,
        )
        assert hard.headers["x-gateway-pool"] == "large"
        assert hard.parse().usage.completion_tokens == 5  # type: ignore[union-attr]
        easy = client.chat.completions.with_raw_response.create(
            model="auto", messages=[{"role": "user", "content": "Hello!"}], max_tokens=5
        )
        assert easy.headers["x-gateway-pool"] == "small"
        fleet = subprocess.run(
            ["pgrep", "-P", str(proc.pid)], capture_output=True, text=True
        ).stdout.split()
        assert fleet, "the demo runs its fleet as a child process"
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=15)
    for pid in fleet:
        assert not Path(f"/proc/{pid}").exists(), "the demo left its fleet running after SIGTERM"


SEMANTIC = """
backends:
  - {name: b0, url: "http://127.0.0.1:9", model: m, pool: p}
models:
  m: {pool: p}
cache: {enabled: true}
"""


def test_the_lean_install_runs_the_demo_without_the_semantic_extra(tmp_path: Path) -> None:
    wheel = _build_wheel(tmp_path)
    venv = tmp_path / "lean"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    pip = [str(python), "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "install", str(wheel)], check=True, timeout=600)
    heavy = "import importlib.util as u; print([m for m in HEAVY if u.find_spec(m)])".replace(
        "HEAVY", repr(["torch", "sentence_transformers", "faiss", "transformers"])
    )
    found = subprocess.run([python, "-c", heavy], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "[]"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "semantic.yaml").write_text(SEMANTIC)
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1"}
    env.pop("PYTHONPATH", None)  # the venv's own packages only
    gateway = str(venv / "bin" / "latency-gateway")
    refused = subprocess.run(
        [gateway, "check", "semantic.yaml"], cwd=elsewhere, env=env, capture_output=True, text=True
    )
    assert refused.returncode == 1
    assert "cache.semantic.enabled: needs the semantic extra" in refused.stderr
    assert "pip install 'latency-gateway[semantic]'" in refused.stderr
    port = free_port()
    proc = subprocess.Popen(
        [gateway, "demo", "--port", str(port), "--speed", "20"],
        cwd=elsewhere,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        read_until(proc, "Ctrl-C stops")
        client = openai.OpenAI(
            base_url=f"http://127.0.0.1:{port}/v1", api_key="demo", max_retries=8
        )
        hard = client.chat.completions.with_raw_response.create(
            model="auto", messages=[{"role": "user", "content": HARD}], max_tokens=5
        )
        assert hard.headers["x-gateway-pool"] == "large"
        assert hard.parse().usage.completion_tokens == 5  # type: ignore[union-attr]
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=15)
