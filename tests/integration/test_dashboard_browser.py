"""The live dashboard in headless Chromium (Debian's ``chromium``, driven by Playwright)
against a running gateway: under load the numbers render, then change; opened after an
incident, its charts show the last 15 minutes at once, what happened after dispatch (hedges,
failovers, continuations, the extra load) included. Screenshots are kept in
``tests/.artifacts/`` (``dashboard.png``, ``dashboard-history.png``)."""

from __future__ import annotations

import math
import re
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import pytest
from playwright.sync_api import Page, sync_playwright

from gateway.app import build_app
from gateway.policy import load_policy_text
from gateway.runtime.host_worker import own_snapshot
from gateway.runtime.parts import Gateway
from tests.integration.conftest import GatewayFactory
from tests.support.policies import single_pool
from tests.support.servers import serve

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


RECOVERY_FIELDS = (
    "hedges_sent",
    "hedges_won",
    "hedges_cancelled",
    "extra_share",
    "failovers_stall",
    "failovers_error",
    "failovers_taken_back",
    "continuations_ok",
    "continuations_failed",
    "continuations_impossible",
)


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
        # The gateway's own sampler (a task of its lifespan) adds a point within 5 s.
        page.wait_for_function(
            "() => Number(document.querySelector('canvas[data-chart=\"small:ttft\"]')"
            "?.dataset.points ?? 0) >= 1",
            timeout=20_000,
        )
        sampled = _chart(page, "ttft")
        hedges = _field(page, "recovery:small:hedges_sent")
        health = _field(page, "backend:small-0:health")
        status = page.inner_text("#status")  # read while the gateway still serves the page
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "dashboard.png"), full_page=True)
    assert load.sent > 0
    assert status == "live"
    for values in (first, second):
        assert all(NUMBER.match(v) for v in values.values()), values
    assert float(second["admitted_per_s"]) > 0
    assert first != second  # the numbers move as requests flow
    assert health == "healthy"
    assert hedges == "0.00"  # a healthy replica: no first token was late
    assert sampled["max"] > 0  # an observed TTFT was charted (its size is the machine's)


def _incident(gateway: Gateway) -> None:
    """Fill the gateway's ring as its sampler would have over the last 15 minutes: calm, then
    five minutes of overload (predicted TTFT near the 2 s objective, refusals of sheddable and
    standard requests, a queue, Retry-After advice), then calm again; 20 admitted every 5 s,
    of which, when calm, one hedged (won) and one continued; in the overload no hedge, but
    two failovers (a stall and a take-back). The metrics are filled directly, one 5 s interval
    at a time."""
    m, r, now = gateway.metrics, gateway.recovery, gateway.clock()
    depth = [0.0]
    m.queue_depth.labels("small", "short", "standard").set_function(lambda: depth[0])
    m.ttft_objective.labels("small").set(2.0)
    for i in range(181):
        overload = 60 <= i < 120
        wave = 1 + 0.2 * math.sin(i / 4)
        depth[0] = round(12 * wave) if overload else 0
        m.admitted.labels("small").inc(20)
        r.continuations.labels("small", "ok").inc()
        for move in ("stall", "taken_back") if overload else ():
            r.failovers.labels("small", move).inc()
        for event in () if overload else ("sent", "won", "cancelled"):
            r.hedges.labels("small", event).inc()  # the loser cancelled
        for _ in range(20):
            m.ttft.labels("small", "short", "miss").observe((1.6 if overload else 0.3) * wave)
            m.ttft_predicted.labels("small").observe((1.8 if overload else 0.35) * wave)
        if overload:
            m.shed.labels("small", "objective_unmeetable", "sheddable", "saturated").inc(
                round(40 * wave)
            )
            m.shed.labels("small", "objective_unmeetable", "standard", "saturated").inc(
                round(10 * wave)
            )
            m.shed.labels("small", "deadline_unmeetable", "standard", "deadline").inc(i % 3)
            for seconds in (4 * wave, 8 * wave):
                m.retry_after.labels("small").observe(seconds)
        gateway.history.sample(own_snapshot(gateway, now - 900 + 5 * i))


def _chart(page: Page, key: str) -> dict[str, float]:
    canvas = page.locator(f'canvas[data-chart="small:{key}"]')
    return {
        k: float(canvas.get_attribute(f"data-{k}") or "nan") for k in ("points", "span-s", "max")
    }


@pytest.mark.timeout(90)
def test_dashboard_shows_the_last_15_minutes_at_load(upstream: str, page: Page) -> None:
    app = build_app(load_policy_text(single_pool(upstream)))
    _incident(app.state.gateway)
    with serve(app) as url:
        page.goto(url + "/dashboard")
        # The first answer is drawn before the stamp is set: what follows is what the page
        # showed from its first fetch, before it could have watched anything itself.
        page.wait_for_function("() => document.querySelector('#updated').textContent !== 'never'")
        keys = ("ttft", "shed", "queue", "retry_after", "hedges", "extra", "continuations")
        charts = {key: _chart(page, key) for key in keys}
        shed_legend = page.inner_text('[id="chart:small:shed"] .legend')
        hedge_legend = page.inner_text('[id="chart:small:hedges"] .legend')
        objective = _field(page, "pool:small:ttft_objective_ms")
        recovery = {k: _field(page, f"recovery:small:{k}") for k in RECOVERY_FIELDS}
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "dashboard-history.png"), full_page=True)
    assert page.inner_text("#status") == "live"
    for key, chart in charts.items():
        assert chart["points"] >= 60, (key, chart)  # the refusals: only during the incident
        assert chart["span-s"] >= (290 if key in ("shed", "retry_after") else 895), (key, chart)
    # The predicted p99 crossed the 2 s objective, inside the histogram's (2, 3] bucket.
    assert 2.0 < charts["ttft"]["max"] <= 3.0
    assert charts["queue"]["max"] == 14  # 12 * 1.2, rounded
    assert 8 < charts["retry_after"]["max"] < 10
    for part in (
        "saturated:sheddable",
        "saturated:standard",
        "deadline:standard",
    ):
        assert part in shed_legend
    assert objective == "2000"
    # After dispatch, over 10 s (two 5 s intervals): one hedge or two failovers, one
    # continuation per interval; the extra load: 1 of 20 admitted when calm, 2 in the overload.
    assert charts["hedges"]["max"] == pytest.approx(0.2)
    assert charts["continuations"]["max"] == pytest.approx(0.2)
    assert charts["extra"]["max"] == pytest.approx(10.0)
    for label in ("hedge sent", "hedge won", "hedge cancelled", "failover stall",
                  "failover error", "failover taken back"):  # fmt: skip
        assert label in hedge_legend
    # The table: the point as of the page's fetch, seconds after the incident's last interval
    # (calm: a hedge, no failover), or none in its window when the page came later.
    assert all(NUMBER.match(recovery[k]) for k in RECOVERY_FIELDS if k != "extra_share"), recovery
    assert float(recovery["failovers_stall"]) == 0
    assert re.match(r"^(\d+\.\d%|\u2013)$", recovery["extra_share"]), recovery  # or none
