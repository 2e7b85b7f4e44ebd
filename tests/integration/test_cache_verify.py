"""Sampled verification of semantic hits end to end: the real openai SDK, a real gateway
(uvicorn on 127.0.0.1) with the real embedding model, a fake backend whose answer a test
can change.

A semantic hit is served from the cache at once; with ``verify.sample: 1`` the backend also
gets the request (non-streaming, with the backend's own key, not the client's); a backend
answer that disagrees raises the entry's threshold, so the same paraphrase misses next
time; with ``sample: 0`` the backend gets nothing on a hit.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import httpx2 as httpx
import openai
import pytest

from gateway.app import build_app
from gateway.policy import load_policy_text
from gateway.runtime.parts import Gateway
from loadtests.kit.fake_upstream import FakeConfig, FakeLog, build_fake
from loadtests.kit.serving import Served, serve, serve_app
from tests.support.policies import single_pool

pytestmark = pytest.mark.timeout(300)

UPSTREAM_ENV = "LGW_TEST_VERIFY_KEY"
BACKEND_KEY = "backend-secret-1"
CLIENT_KEY = "client-key-2"
ASKED = "How do I reset my password?"
PARAPHRASE = "How can I reset my password?"
ANSWER = "Open Settings, choose Security, then Reset password."
OTHER = "Passwords cannot be changed here; ask your administrator for a new account."


@contextmanager
def _gateway(
    sample: float,
    config: FakeConfig,
    log: FakeLog,
    monkeypatch: pytest.MonkeyPatch,
    inflight: int = 32,
) -> Iterator[tuple[Served, Gateway, openai.OpenAI]]:
    monkeypatch.setenv(UPSTREAM_ENV, BACKEND_KEY)
    # embed_timeout_s: the model is a real process's work on a busy machine.
    # A bound at which paraphrases are served (at the default, 0.02, none is).
    semantic = (
        "{embed_timeout_s: 60, verifier: features, max_false_hit_rate: 0.1, "
        f"verify: {{sample: {sample}}}}}"
    )
    extra = f"cache:\n  enabled: true\n  semantic: {semantic}\n"
    policy = single_pool("URL", extra=extra, inflight=inflight).replace(
        f"    max_inflight: {inflight}",
        f"    max_inflight: {inflight}\n    api_key_env: {UPSTREAM_ENV}",
    )
    with serve(build_fake(config, log)) as upstream:
        app = build_app(load_policy_text(policy.replace("URL", upstream)))
        gateway: Gateway = app.state.gateway
        with serve_app(app) as served:
            assert served.call(gateway.caches.ready, timeout=120)
            sdk = openai.OpenAI(
                base_url=served.url + "/v1", api_key=CLIENT_KEY, max_retries=0, timeout=30
            )
            yield served, gateway, sdk


def _ask(sdk: openai.OpenAI, text: str) -> tuple[str, str]:
    raw = sdk.chat.completions.with_raw_response.create(
        model="fast", messages=[{"role": "user", "content": text}], temperature=0
    )
    return raw.headers["x-gateway-cache"], raw.parse().choices[0].message.content or ""


def _settle(served: Served, gateway: Gateway) -> None:
    """Wait for stored answers and background verifications."""
    served.call(gateway.caches.ready, timeout=60)


def _config() -> FakeConfig:
    return FakeConfig(ttft_s=0.001, tokens=6, itl_s=0.0, finish_reason="stop", content=ANSWER)


def test_a_disagreeing_backend_tightens_the_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    config, log = _config(), FakeLog()
    with _gateway(1.0, config, log, monkeypatch) as (served, gateway, sdk):
        assert _ask(sdk, ASKED) == ("miss", ANSWER)
        _settle(served, gateway)
        config.content = OTHER  # from now on the backend answers differently
        assert _ask(sdk, PARAPHRASE) == ("semantic", ANSWER)  # served from the cache at once
        _settle(served, gateway)
        assert len(log.bodies) == 2  # the hit's request also went to the backend
        sent, headers = log.bodies[1], log.headers[1]
        assert sent["messages"] == [{"role": "user", "content": PARAPHRASE}]
        assert sent["stream"] is False
        assert sent["model"] == "fake-model"
        assert headers["authorization"] == f"Bearer {BACKEND_KEY}"  # the backend's key...
        assert CLIENT_KEY not in str(headers)  # ...never the client's
        # The entry's threshold rose above this paraphrase: it misses now, and gets the
        # backend's own answer.
        assert _ask(sdk, PARAPHRASE) == ("miss", OTHER)
        assert _ask(sdk, ASKED) == ("exact", ANSWER)  # its own question still hits
        metrics = httpx.get(served.url + "/metrics").text
    assert 'gateway_cache_verifications_total{outcome="disagree"} 1.0' in metrics
    assert 'gateway_cache_tightened_total{step="raised"} 1.0' in metrics
    assert 'gateway_cache_guard_refusals_total{reason="tightened"} 1.0' in metrics
    verify = 'backend="small-0",cache="verify",model="fast",pool="small",status="200"'
    assert f"gateway_requests_total{{{verify}}} 1.0" in metrics


def test_an_agreeing_backend_leaves_the_entry_serving(monkeypatch: pytest.MonkeyPatch) -> None:
    config, log = _config(), FakeLog()
    with _gateway(1.0, config, log, monkeypatch) as (served, gateway, sdk):
        assert _ask(sdk, ASKED) == ("miss", ANSWER)
        _settle(served, gateway)
        assert _ask(sdk, PARAPHRASE) == ("semantic", ANSWER)
        _settle(served, gateway)
        assert len(log.bodies) == 2
        assert _ask(sdk, PARAPHRASE) == ("semantic", ANSWER)
        metrics = httpx.get(served.url + "/metrics").text
    assert 'gateway_cache_verifications_total{outcome="agree"} 2.0' in metrics


def test_with_sampling_off_a_hit_reaches_no_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    config, log = _config(), FakeLog()
    with _gateway(0.0, config, log, monkeypatch) as (served, gateway, sdk):
        assert _ask(sdk, ASKED) == ("miss", ANSWER)
        _settle(served, gateway)
        config.content = OTHER
        for _ in range(2):
            assert _ask(sdk, PARAPHRASE) == ("semantic", ANSWER)
        _settle(served, gateway)
        assert len(log.bodies) == 1
        metrics = httpx.get(served.url + "/metrics").text
    assert "gateway_cache_verifications_total{" not in metrics


def test_a_busy_pool_skips_the_verification(monkeypatch: pytest.MonkeyPatch) -> None:
    """Verification never waits for a slot: with the pool's only one taken, the hit is
    served and not verified."""
    config, log = _config(), FakeLog()
    with _gateway(1.0, config, log, monkeypatch, inflight=1) as (served, gateway, sdk):
        assert _ask(sdk, ASKED) == ("miss", ANSWER)
        _settle(served, gateway)
        log.arrived.clear()
        hang = {
            "model": "fast",
            "messages": [{"role": "user", "content": "hang"}],
            "stream": True,
            # A first token (the client's head goes out with it), then silence.
            "fake": {"tokens": 3, "itl_s": 60},
        }
        with (
            httpx.Client(base_url=served.url, timeout=30) as client,
            client.stream("POST", "/v1/chat/completions", json=hang),
        ):
            assert log.arrived.wait(10)  # it holds the pool's only slot
            assert _ask(sdk, PARAPHRASE) == ("semantic", ANSWER)
            _settle(served, gateway)
            metrics = httpx.get(served.url + "/metrics").text
        assert len(log.bodies) == 2  # the first question and the hanging request only
    assert 'gateway_cache_verifications_total{outcome="skipped"} 1.0' in metrics
    assert 'gateway_cache_verifications_total{outcome="disagree"}' not in metrics
