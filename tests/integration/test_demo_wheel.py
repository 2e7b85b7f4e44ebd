"""The demo from an installed wheel: built from the package sources alone, installed into a
directory of its own, run from an empty directory, stopped with SIGTERM.

The wheel is built offline (``pip wheel --no-deps --no-build-isolation``) from a copy of
pyproject.toml, README.md, gateway/ and loadtests/, so a data file that package-data misses
cannot be found in the checkout instead; the dependencies come from the test's environment.
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

# Scores 0.88 with the demo policy (its difficulty split sends 0.71 and up to large).
HARD = "Derive the closed form of the sum of the first n squares and prove it by induction."


def _build_and_install(tmp: Path) -> Path:
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
    target = tmp / "site"
    subprocess.run([*pip, "install", "--no-deps", "--target", str(target), str(wheel)], check=True)
    return target


def test_demo_runs_from_an_installed_wheel_and_stops_on_sigterm(tmp_path: Path) -> None:
    site = _build_and_install(tmp_path)
    shutil.rmtree(tmp_path / "src")  # nothing of the sources is left to fall back on
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
