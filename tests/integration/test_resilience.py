"""Retries before the first byte, fallback pools, the retry budget and the circuit breaker,
on real servers on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import httpx2 as httpx
import pytest

from gateway.app import build_app
from gateway.policy import load_policy_text
from loadtests.fake_upstream import FakeConfig, FakeLog, build_fake
from tests.support.servers import serve

CHAT = "/v1/chat/completions"


class ManualClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def _no_sleep(seconds: float) -> None:
    return None


@contextmanager
def _fakes(*fail_status: int | None) -> Iterator[list[tuple[str, FakeLog]]]:
    started: list[tuple[str, FakeLog]] = []
    with _stack(fail_status, started):
        yield started


@contextmanager
def _stack(statuses: tuple[int | None, ...], out: list[tuple[str, FakeLog]]) -> Iterator[None]:
    if not statuses:
        yield
        return
    log = FakeLog()
    config = FakeConfig(ttft_s=0.001, tokens=3, itl_s=0.001, fail_status=statuses[0])
    with serve(build_fake(config, log)) as url:
        out.append((url, log))
        with _stack(statuses[1:], out):
            yield


def _policy(backends: list[tuple[str, str]], extra: str = "") -> str:
    lines = ["backends:"]
    for i, (url, pool) in enumerate(backends):
        lines.append(f"  - {{name: b{i}, url: '{url}', model: fake-model, pool: {pool}}}")
    pools = {pool for _, pool in backends}
    lines.append("models:\n  fast: {pool: small}")
    if "large" in pools:
        lines.append("  smart: {pool: large}")
    return "\n".join(lines) + "\n" + extra


@contextmanager
def _gateway(policy: str, clock: ManualClock | None = None) -> Iterator[httpx.Client]:
    app = build_app(
        load_policy_text(policy), sleep=_no_sleep, **({"clock": clock} if clock else {})
    )
    with serve(app) as url, httpx.Client(base_url=url, timeout=10) as http:
        yield http


def _ask(http: httpx.Client, model: str = "fast", stream: bool = False) -> httpx.Response:
    body = {"model": model, "messages": [{"role": "user", "content": "hi"}], "stream": stream}
    return http.post(CHAT, json=body)


BUDGET = "retry_budget: {ratio: 1.0, min_retries_per_s: 100}\n"


@pytest.mark.parametrize("status", [429, 502, 503])
def test_retryable_status_is_retried_on_another_backend(status: int) -> None:
    with _fakes(status, None) as fakes:
        policy = _policy([(fakes[0][0], "small"), (fakes[1][0], "small")], BUDGET)
        with _gateway(policy) as http:
            answers = [_ask(http, stream=i % 2 == 0) for i in range(6)]
            metrics = http.get("/metrics").text
    assert [a.status_code for a in answers] == [200] * 6
    assert {a.headers["x-gateway-backend"] for a in answers} == {"b1"}
    assert len(fakes[0][1].bodies) >= 1  # equal replicas: seeded ties sent first tries to b0
    assert 'gateway_retries_total{pool="small"' in metrics
    assert (
        'gateway_requests_total{backend="b1",model="fast",pool="small",status="200"} 6.0' in metrics
    )


def test_a_500_is_not_retried() -> None:
    with _fakes(500, None) as fakes:
        policy = _policy([(fakes[0][0], "small"), (fakes[1][0], "small")], BUDGET)
        with _gateway(policy) as http:
            statuses = [_ask(http).status_code for _ in range(8)]
    failed, served = len(fakes[0][1].bodies), len(fakes[1][1].bodies)
    assert failed > 0  # equal replicas: seeded ties sent some to the failing one
    assert failed + served == 8  # not one retry
    assert statuses.count(502) == failed


def test_fallback_pool_serves_and_marks_degraded() -> None:
    extra = BUDGET + "pools:\n  large: {fallback: [small]}\n"
    with _fakes(503, None) as fakes:
        policy = _policy([(fakes[0][0], "large"), (fakes[1][0], "small")], extra)
        with _gateway(policy) as http:
            answer = _ask(http, model="smart")
            metrics = http.get("/metrics").text
    assert answer.status_code == 200
    assert answer.headers["x-gateway-degraded"] == "1"
    assert answer.headers["x-gateway-pool"] == "small"
    assert answer.headers["x-gateway-route-reason"] == "model:smart;fallback:small"
    assert answer.json()["model"] == "smart"
    assert 'gateway_fallbacks_total{from_pool="large",to_pool="small"} 1.0' in metrics


def test_fallback_skips_a_pool_whose_context_the_request_does_not_fit() -> None:
    extra = BUDGET + "pools:\n  large: {fallback: [small]}\n  small: {max_context: 600}\n"
    long = " ".join(["word"] * 800)  # ~800 tokens: fits large (no limit), not small
    with _fakes(503, None) as fakes:
        policy = _policy([(fakes[0][0], "large"), (fakes[1][0], "small")], extra)
        with _gateway(policy) as http:
            short = _ask(http, model="smart")
            body = {"model": "smart", "messages": [{"role": "user", "content": long}]}
            refused = http.post(CHAT, json=body)
    assert short.status_code == 200  # a request that fits still falls back
    assert short.headers["x-gateway-pool"] == "small"
    # The long one is not sent where the backend would refuse it: the large pool's 503 is
    # the answer, and the small pool's backend saw only the short request.
    assert refused.status_code == 503
    assert "retry-after" in refused.headers
    assert len(fakes[1][1].bodies) == 1


def test_spent_budget_answers_the_error_instead_of_retrying() -> None:
    extra = "retry_budget: {ratio: 0, min_retries_per_s: 0}\npools:\n  large: {fallback: [small]}\n"
    with _fakes(503, None) as fakes:
        policy = _policy([(fakes[0][0], "large"), (fakes[1][0], "small")], extra)
        with _gateway(policy) as http:
            answer = _ask(http, model="smart")
            metrics = http.get("/metrics").text
    assert answer.status_code == 503
    assert answer.headers["retry-after"] == "1"
    assert fakes[1][1].bodies == []
    # Refused twice: the retry inside the pool, then the move to the fallback pool.
    assert "gateway_retry_budget_exhausted_total 2.0" in metrics


def test_breaker_ejects_a_failing_backend_then_probes_it_after_cooldown() -> None:
    clock = ManualClock()
    extra = (
        "pools:\n  small:\n    retry: {attempts: 1}\n"
        "    breaker: {consecutive_failures: 2, cooldown_s: 30, min_requests: 5, window: 10}\n"
    )
    with _fakes(500, None) as fakes:
        policy = _policy([(fakes[0][0], "small"), (fakes[1][0], "small")], extra)
        with _gateway(policy, clock) as http:
            first = [_ask(http).status_code for _ in range(12) if len(fakes[0][1].bodies) < 2]
            during = [_ask(http).headers["x-gateway-backend"] for _ in range(6)]
            metrics = http.get("/metrics").text
            clock.now += 31  # cooldown over: half-open, one probe may go to b0
            after = [_ask(http).headers.get("x-gateway-backend") for _ in range(4)]
    assert first.count(502) == 2  # b0 failed twice: ejected
    assert during == ["b1"] * 6
    assert 'gateway_backend_breaker_state{backend="b0"} 2.0' in metrics
    assert 'gateway_backend_ejections_total{backend="b0"} 1.0' in metrics
    assert after.count("b0") == 1  # the probe failed: ejected again, for longer
