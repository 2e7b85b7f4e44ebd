"""Retries before the first byte, fallback pools, the retry budget and the circuit breaker,
on real servers on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import httpx2 as httpx
import pytest
import yaml

from gateway.app import build_app
from gateway.policy import load_policy_text
from loadtests.kit.fake_upstream import FakeConfig, FakeLog, build_fake
from tests.support.resetting_backend import resetting_backend
from tests.support.resetting_backend import url as url_of
from tests.support.servers import serve
from tests.support.waiting import until_written

CHAT = "/v1/chat/completions"


class ManualClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def _no_sleep(seconds: float) -> None:
    return None


# A replica that sends its 200 head and dies halfway through the whole answer.
DIES = -1


@contextmanager
def _fakes(*fail_status: int | None) -> Iterator[list[tuple[str, FakeLog]]]:
    """Fake replicas answering every request with a status (``DIES``: cut halfway), or
    well (None)."""
    started: list[tuple[str, FakeLog]] = []
    with _stack(fail_status, started):
        yield started


@contextmanager
def _stack(statuses: tuple[int | None, ...], out: list[tuple[str, FakeLog]]) -> Iterator[None]:
    if not statuses:
        yield
        return
    log = FakeLog()
    status, dies = (None, True) if statuses[0] == DIES else (statuses[0], False)
    config = FakeConfig(ttft_s=0.001, tokens=3, itl_s=0.001, fail_status=status, break_whole=dies)
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


def _seeded(policy: str) -> str:
    """Ties between equal replicas drawn with seed 0 (each process draws its own by default),
    so which replica a test's first tries reach is the same every run."""
    document = yaml.safe_load(policy)
    for pool in {b["pool"] for b in document["backends"]}:
        settings = document.setdefault("pools", {}).setdefault(pool, {})
        settings.setdefault("scheduling", {}).setdefault("seed", 0)
    return yaml.safe_dump(document, sort_keys=False)


@contextmanager
def _gateway(policy: str, clock: ManualClock | None = None) -> Iterator[httpx.Client]:
    app = build_app(
        load_policy_text(_seeded(policy)), sleep=_no_sleep, **({"clock": clock} if clock else {})
    )
    with serve(app) as url, httpx.Client(base_url=url, timeout=10) as http:
        yield http


def _ask(http: httpx.Client, model: str = "fast", stream: bool = False) -> httpx.Response:
    body = {"model": model, "messages": [{"role": "user", "content": "hi"}], "stream": stream}
    return http.post(CHAT, json=body)


BUDGET = "retry_budget: {ratio: 1.0, min_retries_per_s: 100}\n"


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504])
def test_retryable_status_is_retried_on_another_backend(status: int) -> None:
    with _fakes(status, None) as fakes:
        policy = _policy([(fakes[0][0], "small"), (fakes[1][0], "small")], BUDGET)
        with _gateway(policy) as http:
            answers = [_ask(http, stream=i % 2 == 0) for i in range(6)]
            metrics = http.get("/metrics").text
    assert [a.status_code for a in answers] == [200] * 6
    assert {a.headers["x-gateway-backend"] for a in answers} == {"b1"}
    assert len(fakes[0][1].bodies) >= 1  # equal replicas: seed 0's ties sent first tries to b0
    assert 'gateway_retries_total{pool="small"' in metrics
    assert (
        'gateway_requests_total{backend="b1",cache="bypass",model="fast",pool="small",'
        'status="200"} 6.0' in metrics
    )


def test_a_whole_answer_cut_halfway_is_answered_by_another_replica() -> None:
    """The whole answer is read before its head goes out: a replica that dies in the middle
    of it has shown the client nothing, so another answers."""
    with _fakes(DIES, None) as fakes:
        policy = _policy([(fakes[0][0], "small"), (fakes[1][0], "small")], BUDGET)
        with _gateway(policy) as http:
            answers = [_ask(http) for _ in range(6)]
            metrics = http.get("/metrics").text
    assert [a.status_code for a in answers] == [200] * 6
    assert all(a.json()["choices"][0]["message"]["content"] for a in answers)
    assert {a.headers["x-gateway-backend"] for a in answers} == {"b1"}
    assert len(fakes[0][1].bodies) >= 1  # equal replicas: seed 0's ties sent first tries to b0
    assert 'gateway_upstream_errors_total{backend="b0",kind="upstream_protocol"}' in metrics


# Until its breaker trips, a broken replica costs one retry per failure: two broken replicas
# and the default breaker (5 failures in a row) need 10 retries, the floor of this budget
# (1 a second over the default 10 s window); the default floor (5) would leave some 502s.
TEN_RETRIES = "retry_budget: {min_retries_per_s: 1}\n"


def test_one_healthy_replica_of_three_serves_every_request() -> None:
    """One replica answers 500, one resets the connection once it has read the request:
    every request is retried onto the healthy one, within the retry budget."""
    with _fakes(500, None) as fakes, resetting_backend() as resetting:
        backends = [(fakes[0][0], "small"), (url_of(resetting), "small"), (fakes[1][0], "small")]
        with _gateway(_policy(backends, TEN_RETRIES)) as http:
            answers = [_ask(http, stream=i % 2 == 0) for i in range(30)]
            metrics = http.get("/metrics").text
    assert [a.status_code for a in answers] == [200] * 30
    assert {a.headers["x-gateway-backend"] for a in answers} == {"b2"}
    assert len(fakes[0][1].bodies) >= 1  # both broken replicas were tried
    assert resetting.resets >= 1
    assert 'gateway_upstream_errors_total{backend="b0",kind="upstream_status"}' in metrics
    assert 'gateway_upstream_errors_total{backend="b1",kind="upstream_protocol"}' in metrics
    assert "gateway_retry_budget_exhausted_total 0.0" in metrics


def test_a_gateway_timeout_is_not_retried() -> None:
    """The gateway's own first-token timeout: the next replica would likely be as slow."""
    slow = "pools: {small: {timeouts: {first_token_s: 0.2, total_s: 0.2}}}\n" + BUDGET
    body = {"model": "fast", "messages": [{"role": "user", "content": "hi"}], "fake": {"hang": 1}}
    with (
        _fakes(None, None) as fakes,
        _gateway(_policy([(f, "small") for f, _ in fakes], slow)) as http,
    ):
        answer = http.post(CHAT, json=body)
    assert answer.status_code == 504
    assert len(fakes[0][1].bodies) + len(fakes[1][1].bodies) == 1


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


def test_the_gateway_overhead_leaves_out_the_queue_wait() -> None:
    """On a clock that moves only when told: a request that waited 2 s for the pool's only
    slot has spent 2 s in the queue and no time as gateway overhead."""
    clock = ManualClock()
    one_slot = "pools: {small: {admission: {objective: null}}}\n"
    # A first token, then silence: the client's head goes out with the first token.
    hang = {"stream": True, "fake": {"tokens": 3, "itl_s": 60}}
    with _fakes(None) as fakes:
        policy = _policy([(fakes[0][0], "small")], one_slot).replace(
            "pool: small}", "pool: small, max_inflight: 1}", 1
        )
        with _gateway(policy, clock) as http, ThreadPoolExecutor(1) as pool:
            body = {"model": "fast", "messages": [{"role": "user", "content": "hi"}]}
            with http.stream("POST", CHAT, json={**body, **hang}) as holding:
                assert holding.status_code == 200  # holds the only slot
                queued = pool.submit(http.post, CHAT, json=body)
                _wait_for(
                    http, 'gateway_queue_depth{lane="short",pool="small",priority="standard"} 1.0'
                )
                clock.now += 2.0
            assert queued.result(timeout=30).status_code == 200
            metrics = http.get("/metrics").text
    assert 'gateway_queue_wait_seconds_sum{pool="small"} 2.0' in metrics
    assert "gateway_overhead_seconds_count 2.0" in metrics
    assert "gateway_overhead_seconds_sum 0.0" in metrics


def _wait_for(http: httpx.Client, line: str) -> None:
    """Until /metrics shows ``line`` (an event in another thread, whatever the speed)."""
    until_written(lambda: line in http.get("/metrics").text, timeout_s=30.0, poll_s=0.01)
