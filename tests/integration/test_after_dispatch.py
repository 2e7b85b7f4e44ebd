"""After dispatch, through a real gateway in front of two simulated vLLM replicas (real
uvicorn servers) with the simulator's faults, driven by the real openai SDK: a replica that
never sends a first token is failed over, a late first token is raced and the loser aborted
on its replica, and a stream whose replica dies mid-answer is continued on the other with the
very text of an uninterrupted run."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager

import httpx2 as httpx
import openai

from loadtests.sim.faults import Death, Faults, Stall
from tests.integration.conftest import GatewayFactory
from tests.support.sim_replica import SERVED, SimReplica, sim_replica

STALLS = Faults(stall=Stall(rate=1.0, seconds="never"))
DEATHS = Faults(death=Death(rate=1.0, after_tokens=4, mode="cut"))


def _policy(a: SimReplica, b: SimReplica, recovery: str) -> str:
    return f"""
backends:
  - {{name: a, url: {a.url}, engine: vllm, model: {SERVED}, pool: small}}
  - {{name: b, url: {b.url}, engine: vllm, model: {SERVED}, pool: small}}
models:
  fast: {{pool: small}}
health: {{timeout_s: 30}}
pools:
  small:
    breaker: {{consecutive_failures: 100}}
    retry: {{attempts: 3, backoff_initial_s: 0.001, backoff_max_s: 0.001, jitter_s: 0}}
    recovery: {recovery}
"""


@contextmanager
def _fleet(a_faults: Faults) -> Iterator[tuple[SimReplica, SimReplica]]:
    with ExitStack() as stack:
        a = stack.enter_context(sim_replica(name="a", faults=a_faults))
        b = stack.enter_context(sim_replica(name="b"))
        yield a, b


def _stream(sdk: openai.OpenAI, prompt: str, max_tokens: int = 24) -> tuple[str, set[str], int]:
    """The text, the ids its chunks carried, and the usage's completion tokens."""
    text, ids, completion = [], set(), -1
    stream = sdk.chat.completions.create(
        model="fast",
        messages=[{"role": "user", "content": prompt}],
        max_tokens=max_tokens,
        seed=7,
        stream=True,
        stream_options={"include_usage": True},
    )
    for chunk in stream:
        ids.add(chunk.id)
        if chunk.choices and chunk.choices[0].delta.content:
            text.append(chunk.choices[0].delta.content)
        if chunk.usage is not None:
            completion = chunk.usage.completion_tokens
    return "".join(text), ids, completion


def _sdk(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0, timeout=60)


def _metric(url: str, line_start: str) -> float:
    text = httpx.get(url + "/metrics", timeout=10).text
    return sum(
        float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(line_start)
    )


def test_a_replica_that_sends_no_first_token_is_failed_over(
    start_gateway: GatewayFactory,
) -> None:
    recovery = "{hedge: false, stall_min_s: 0.5, stall_factor: 1}"
    with _fleet(STALLS) as (a, b), start_gateway(_policy(a, b, recovery)) as url:
        sdk = _sdk(url)
        answers = [_stream(sdk, f"question {i}") for i in range(6)]
        failovers = _metric(url, 'gateway_failovers_total{pool="small",reason="stall"}')
    stalled = a.replica.faults.counts
    assert stalled.stalls >= 1, "replica a was never picked: nothing to fail over"
    # Every request sent to a was given up there (aborted during its stall) and answered by b.
    assert stalled.stalls_abandoned == stalled.stalls
    assert failovers == stalled.stalls
    assert all(text and len(ids) == 1 for text, ids, _ in answers)


def test_a_late_first_token_is_raced_and_the_loser_aborted(
    start_gateway: GatewayFactory,
) -> None:
    recovery = "{hedge: true, hedge_budget: 1.0, stall_factor: 50}"
    with _fleet(Faults()) as (a, b), start_gateway(_policy(a, b, recovery)) as url:
        sdk = _sdk(url)
        replicas = {"a": a, "b": b}
        # Both replicas learn their first tokens (two at a time: each gets its share), so a
        # late one has a band to be late past and the other a prediction to be sooner.
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda i: _stream(sdk, f"warm {i}", max_tokens=2), range(40)))
        served = _served_by(sdk, "warm again")
        for i in range(6):
            # The replica the gateway would pick next (the last one's, all else equal) never
            # sends a first token; the other is well.
            for name, sim in replicas.items():
                sim.replica.faults.faults = STALLS if name == served else Faults()
            served = _served_by(sdk, f"question {i}")
        sent = _metric(url, 'gateway_hedges_total{event="sent"')
        won = _metric(url, 'gateway_hedges_total{event="won"')
        cancelled = _metric(url, 'gateway_hedges_total{event="cancelled"')
    counts = [sim.replica.faults.counts for sim in replicas.values()]
    stalls = sum(c.stalls for c in counts)
    assert stalls >= 1, "the stalled replica was never picked: nothing to race"
    assert sum(c.stalls_abandoned for c in counts) == stalls  # every loser aborted there
    # Raced when its band was supported and the other replica predicted sooner (else failed
    # over at its stall limit): every race was won by the hedge, its loser cancelled.
    assert sent >= 1
    assert won == cancelled == sent


def _served_by(sdk: openai.OpenAI, prompt: str) -> str:
    """The replica that answered a streamed question (its text whole)."""
    raw = sdk.chat.completions.with_raw_response.create(
        model="fast",
        messages=[{"role": "user", "content": prompt}],
        max_tokens=8,
        stream=True,
    )
    text = "".join(c.choices[0].delta.content or "" for c in raw.parse() if c.choices)
    assert text
    return raw.headers["x-gateway-backend"]


def test_a_stream_whose_replica_dies_is_continued_exactly(
    start_gateway: GatewayFactory,
) -> None:
    prompts = [f"tell me about queue {i}" for i in range(6)]
    with _fleet(Faults()) as (a, b), start_gateway(_policy(a, b, "{hedge: false}")) as url:
        sdk = _sdk(url)
        whole = [_stream(sdk, p) for p in prompts]  # uninterrupted
        a.replica.faults.faults = DEATHS
        with ThreadPoolExecutor(2) as pool:  # two at a time: each replica gets its share
            cut = list(pool.map(lambda p: _stream(sdk, p), prompts))
        ok = _metric(url, 'gateway_continuations_total{pool="small",result="ok"}')
    deaths = a.replica.faults.counts.deaths["cut"]
    assert deaths >= 1, "replica a was never picked: nothing to continue"
    assert b.replica.faults.counts.continuations == deaths == ok
    for (text, _, tokens), (again, ids, summed) in zip(whole, cut, strict=True):
        assert again == text  # no token lost or repeated
        assert len(ids) == 1  # one stream
        assert summed == tokens  # usage summed over both replicas
