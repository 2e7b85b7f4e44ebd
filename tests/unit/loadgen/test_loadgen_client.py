from __future__ import annotations

import pytest
from loadgen_fake_upstream import FakeConfig, serve

from loadtests.loadgen.client import ClientConfig, LoadClient, Target
from loadtests.loadgen.request import PlannedRequest
from loadtests.loadgen.runner import RunOptions, execute
from loadtests.loadgen.summary import SloThresholds, summarise

CLOCKS = 0.005


def _request(index: int, at_s: float, model: str = "ok", max_tokens: int = 10) -> PlannedRequest:
    return PlannedRequest(
        index=index,
        at_s=at_s,
        label="x",
        model=model,
        messages=[{"role": "user", "content": "hi"}],
        max_tokens=max_tokens,
        temperature=0.0,
    )


async def test_open_loop_run_records_latencies(fake_url: str, fake_config: FakeConfig) -> None:
    plan = [_request(i, i * 0.02) for i in range(100)]  # 50 req/s for 2 s
    options = RunOptions(
        client=ClientConfig(targets=[Target(fake_url)]),
        metrics_urls=[fake_url + "/metrics"],
        sample_interval_s=0.2,
    )
    result = await execute(plan, options)
    records = result.records
    assert [r.index for r in records] == list(range(100))
    assert all(r.ok for r in records), {r.error for r in records}
    # Only bounds a busy machine cannot break: it makes answers later, never earlier. How late
    # (lateness, gaps between tokens) is for the benchmarks; chunks that a starved client
    # reads together have gaps near zero. The client's clock and the fake's sleeps are not
    # the same clock: CLOCKS is their allowed disagreement.
    generation = fake_config.ttft_s + 9 * fake_config.itl_s
    for r in records:
        assert r.ttft_s is not None
        assert r.e2e_s is not None
        assert r.ttft_s >= fake_config.ttft_s - CLOCKS
        assert len(r.itl_s) == 9
        assert min(r.itl_s) >= 0
        assert r.e2e_s >= r.ttft_s + sum(r.itl_s)
        assert r.e2e_s >= generation - CLOCKS
        assert r.completion_tokens == 10
        assert r.prompt_tokens == 7
        assert r.headers == {"x-gateway-pool": "small"}
        assert r.sent_s >= r.scheduled_s - 1e-6
    # An open loop sends on schedule, not after the previous answer: requests overlap (every
    # 20 ms, each answer taking at least 95 ms), however slow the machine.
    ends = [r.sent_s + (r.e2e_s or 0.0) for r in records]
    assert any(nxt.sent_s < end for nxt, end in zip(records[1:], ends, strict=False))
    assert result.samples
    assert {s.value for s in result.samples} == {5.0}
    summary = summarise(records, SloThresholds(ttft_ms=10_000, tpot_ms=1_000))
    assert summary["goodput_rps"] == pytest.approx(summary["throughput_rps"])
    assert summary["tpot_ms"]["p50"] >= 0


@pytest.mark.parametrize(
    ("model", "status", "error"),
    [
        ("shed", 429, "http_429:overloaded"),
        ("fail", 500, "http_500"),
        ("broken", 200, "broken_stream:RemoteProtocolError"),
        ("error-event", 200, "engine_dead"),
        ("no-done", 200, "truncated"),
    ],
)
async def test_failures_are_recorded(fake_url: str, model: str, status: int, error: str) -> None:
    client = LoadClient(ClientConfig(targets=[Target(fake_url)]))
    try:
        record = await client.send(_request(0, 0.0, model=model))
    finally:
        await client.aclose()
    assert record.status == status
    assert record.error == error
    assert not record.ok
    if model == "shed":
        assert record.shed
        assert record.headers["retry-after"] == "2"


async def test_connect_error_and_timeout(fake_url: str) -> None:
    client = LoadClient(ClientConfig(targets=[Target("http://127.0.0.1:9")]))
    try:
        record = await client.send(_request(0, 0.0))
    finally:
        await client.aclose()
    assert record.error == "connect"
    slow = LoadClient(ClientConfig(targets=[Target(fake_url)], request_timeout_s=0.02))
    try:
        record = await slow.send(_request(0, 0.0))
    finally:
        await slow.aclose()
    assert record.error == "timeout"


async def test_direct_mode_round_robin_rewrites_model(fake_url: str) -> None:
    targets = [Target(fake_url, "ok"), Target(fake_url + "/", "shed")]
    client = LoadClient(ClientConfig(targets=targets))
    try:
        records = [await client.send(_request(i, 0.0, model="auto")) for i in range(4)]
    finally:
        await client.aclose()
    assert [r.status for r in records] == [200, 429, 200, 429]


async def test_first_token_timeout_bounds_the_wait_not_the_stream() -> None:
    # First token after 50 ms, then 40 tokens 20 ms apart: 0.85 s in all.
    with serve(FakeConfig(ttft_s=0.05, itl_s=0.02)) as url:
        patient = LoadClient(ClientConfig(targets=[Target(url)], first_token_timeout_s=0.5))
        hasty = LoadClient(ClientConfig(targets=[Target(url)], first_token_timeout_s=0.01))
        try:
            served = await patient.send(_request(0, 0.0, max_tokens=40))
            gave_up = await hasty.send(_request(1, 0.0, max_tokens=40))
        finally:
            await patient.aclose()
            await hasty.aclose()
    assert served.ok
    assert served.e2e_s is not None
    assert served.e2e_s > 0.5  # the stream outlived the first-token limit
    assert (gave_up.error, gave_up.ttft_s) == ("timeout", None)


@pytest.mark.parametrize(
    ("keep", "model", "text"),
    [(False, "ok", None), (True, "ok", " t0 t1 t2 t3"), (True, "broken", " t0 t1"),
     (True, "shed", None)],
)  # fmt: skip
async def test_the_answers_text_is_kept_when_asked(
    fake_url: str, keep: bool, model: str, text: str | None
) -> None:
    client = LoadClient(ClientConfig(targets=[Target(fake_url)], keep_text=keep))
    try:
        record = await client.send(_request(0, 0.0, model=model, max_tokens=4))
    finally:
        await client.aclose()
    assert record.text == text
