"""The documentation's screenshots of the live dashboard, taken in a real browser.

``python -m loadtests.kit.screenshots [--out docs/img] [--seconds 40] [--users 48]`` starts
``latency-gateway demo`` (the simulated fleet and the gateway in front) on a free port, waits
until it is ready, runs closed-loop streaming users against it (a mix of the ``fast``,
``smart`` and ``auto`` models, long enough answers that the pools queue), and after
``--seconds`` opens ``/dashboard`` in headless Chromium (Debian's ``/usr/bin/chromium``,
driven by Playwright as ``tests/integration/test_dashboard_browser.py`` does) and saves:

- ``dashboard.png``: the page's top (pools and backends tables, the first charts);
- ``dashboard-charts.png``: the per-pool charts of the last 15 minutes.

The demo is stopped (SIGINT) at the end, whatever happens.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import httpx2 as httpx

from loadtests.kit.ports import free_port

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
PROMPTS = (
    ("fast", "Write a short poem about the sea."),
    ("smart", "Explain how a KV cache speeds up decoding, step by step."),
    ("auto", "Derive the closed form of the sum of the first n squares and prove it."),
    ("auto", "Hello!"),
)


@contextlib.contextmanager
def demo(port: int) -> Iterator[subprocess.Popen[bytes]]:
    """``latency-gateway demo`` on ``port``, ready; stopped with SIGINT on the way out."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "gateway", "demo", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 120
        while not _ready(port):
            if proc.poll() is not None:
                raise RuntimeError(f"the demo exited with {proc.returncode}")
            if time.monotonic() > deadline:
                raise RuntimeError("the demo was not ready within 120 s")
            time.sleep(0.5)
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


def _ready(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


async def _user(http: httpx.AsyncClient, index: int, stop: threading.Event) -> None:
    model, text = PROMPTS[index % len(PROMPTS)]
    body = {
        "model": model,
        "messages": [{"role": "user", "content": text}],
        "max_tokens": 256,
        "stream": True,
    }
    while not stop.is_set():
        try:
            async with http.stream("POST", "/v1/chat/completions", json=body) as response:
                async for _ in response.aiter_bytes():
                    pass
                if response.status_code != 200:
                    await asyncio.sleep(0.5)
        except httpx.HTTPError:
            await asyncio.sleep(0.5)


async def _load(url: str, users: int, stop: threading.Event) -> None:
    limits = httpx.Limits(max_connections=users + 4)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as http:
        await asyncio.gather(*(_user(http, i, stop) for i in range(users)))


def shoot(url: str, out: Path) -> list[Path]:
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    top, charts = out / "dashboard.png", out / "dashboard-charts.png"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.goto(url + "/dashboard")
            page.wait_for_function(
                "() => document.querySelector('#updated').textContent !== 'never'",
                timeout=30_000,
            )
            page.wait_for_timeout(3000)  # a few refreshes under load
            page.screenshot(path=str(top))
            page.locator("#history").screenshot(path=str(charts))
        finally:
            browser.close()
    return [top, charts]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m loadtests.kit.screenshots", description=__doc__)
    ap.add_argument("--out", default="docs/img", help="folder for the PNGs")
    ap.add_argument("--seconds", type=float, default=40.0, help="load before the screenshots")
    ap.add_argument("--users", type=int, default=48, help="concurrent streaming users")
    args = ap.parse_args(argv)
    if not Path(CHROMIUM).exists():
        print("Debian's chromium is needed (apt-get install chromium)", file=sys.stderr)
        return 2
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with demo(port):
        stop = threading.Event()
        load = threading.Thread(target=asyncio.run, args=(_load(url, args.users, stop),))
        load.start()
        try:
            time.sleep(args.seconds)
            saved = shoot(url, Path(args.out))
        finally:
            stop.set()
            load.join(timeout=90)
    for path in saved:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
