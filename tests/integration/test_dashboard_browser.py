"""The live dashboard in headless Chromium (Debian's ``chromium``, driven by Playwright)
against a running gateway under load: the numbers render, then change; a screenshot is kept
in ``tests/.artifacts/dashboard.png``."""

from __future__ import annotations

import re
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import pytest
from playwright.sync_api import Page, sync_playwright

from tests.integration.conftest import GatewayFactory
from tests.support.policies import single_pool

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[1] / ".artifacts"
NUMBER = re.compile(r"^\d+(\.\d+)?$")
# Flags a closed network needs: Chromium's background fetches are refused here, many at once.
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


class Load:
    """Streams requests through the gateway from two threads until stopped."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, daemon=True) for _ in range(2)]
        self.sent = 0

    def __enter__(self) -> Load:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=10)

    def _run(self) -> None:
        body = {"model": "fast", "messages": [{"role": "user", "content": "hi"}], "stream": True}
        with httpx.Client(base_url=self._url, timeout=10) as http:
            while not self._stop.is_set():
                with http.stream("POST", "/v1/chat/completions", json=body) as response:
                    for _ in response.iter_bytes():
                        pass
                self.sent += 1


@pytest.fixture
def page() -> Iterator[Page]:
    if not Path(CHROMIUM).exists():
        pytest.fail("Debian's chromium is required (bash .ci/test installs it)")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            yield browser.new_page(viewport={"width": 1100, "height": 800})
        finally:
            browser.close()


def _field(page: Page, name: str) -> str:
    return page.inner_text(f'[data-field="{name}"]')


@pytest.mark.timeout(90)
def test_dashboard_renders_and_updates_under_load(
    upstream: str, start_gateway: GatewayFactory, page: Page
) -> None:
    with start_gateway(single_pool(upstream)) as url, Load(url) as load:
        page.goto(url + "/dashboard")
        page.wait_for_function(
            "() => /^\\d/.test(document.querySelector("
            "'[data-field=\"pool:small:ttft_p50_ms\"]')?.textContent ?? '')",
            timeout=20_000,
        )
        first = {k: _field(page, f"pool:small:{k}") for k in ("admitted_per_s", "ttft_p99_ms")}
        stamp = page.inner_text("#updated")
        page.wait_for_function(
            "(s) => document.querySelector('#updated').textContent !== s", arg=stamp
        )
        page.wait_for_timeout(2500)  # a few refreshes under load
        second = {k: _field(page, f"pool:small:{k}") for k in ("admitted_per_s", "ttft_p99_ms")}
        health = _field(page, "backend:small-0:health")
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "dashboard.png"), full_page=True)
    assert load.sent > 0
    assert page.inner_text("#status") == "live"
    for values in (first, second):
        assert all(NUMBER.match(v) for v in values.values()), values
    assert float(second["admitted_per_s"]) > 0
    assert first != second  # the numbers move as requests flow
    assert health == "healthy"
