"""Take-back to the gateway's queue, through a real gateway in front of two simulated vLLM
replicas (real uvicorn servers) that run one request at a time, driven by the real openai
SDK (``recovery/take_back.py``, ``path/exchange/readmission.py``).

Before the gateway has read an engine's batch it sends up to its backend's ``max_inflight``
there; the engine queues what it cannot run, and the read that shows it waiting takes those
requests back. With the other replica as full and nothing known of the wait there (a fresh
gateway's predictions rest on no observations), each goes back to the gateway's queue:

- with a generous deadline it is served, on whichever replica frees a slot first: every
  stream answered 200, whole; the engine dropped the attempts the gateway took back;
- with a short ``x-gateway-deadline-ms`` it gets the waiter's 503 with Retry-After by its
  deadline, never a 200 then an error (its head waits for its first token).

Assertions are on outcomes and counters only, not timings: the machine may be slow.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import httpx2 as httpx
import openai

from tests.integration.conftest import GatewayFactory
from tests.support.sim_replica import SERVED, SimReplica, sim_replica

SPEED = 0.5  # ~8 ms a token: an answer of TOKENS holds its engine's one slot for seconds
TOKENS = 300


def _policy(a: SimReplica, b: SimReplica, ttft_s: float) -> str:
    return f"""
backends:
  - {{name: a, url: {a.url}, engine: vllm, model: {SERVED}, pool: p, max_inflight: 3}}
  - {{name: b, url: {b.url}, engine: vllm, model: {SERVED}, pool: p, max_inflight: 3}}
models:
  m: {{pool: p}}
health: {{timeout_s: 30, scrape_interval_s: 0.2}}
pools:
  p:
    admission: {{objective: {{ttft_s: {ttft_s}}}}}
    recovery: {{hedge: false}}
    timeouts: {{first_token_s: 120, total_s: 300}}
"""


@contextmanager
def _fleet() -> Iterator[tuple[SimReplica, SimReplica]]:
    with ExitStack() as stack:
        a = stack.enter_context(sim_replica(name="a", speed=SPEED, max_num_seqs=1))
        b = stack.enter_context(sim_replica(name="b", speed=SPEED, max_num_seqs=1))
        yield a, b


async def _ask(
    url: str, outcomes: Counter[str], deadline_ms: int | None = None, tokens: int = TOKENS
) -> None:
    """One stream to its end: ``ok`` with its whole text, or the status, code and whether
    the refusal said when to come back."""
    headers = {} if deadline_ms is None else {"x-gateway-deadline-ms": str(deadline_ms)}
    sdk = openai.AsyncOpenAI(base_url=url + "/v1", api_key="unused", max_retries=0, timeout=120)
    try:
        stream = await sdk.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "tell me about the sea"}],
            max_tokens=tokens,
            stream=True,
            extra_body={"ignore_eos": True},
            extra_headers=headers,
        )
        got = 0
        async for chunk in stream:
            got += bool(chunk.choices and chunk.choices[0].delta.content)
        outcomes["ok" if got == tokens else f"cut at {got}"] += 1
    except openai.APIStatusError as exc:
        advised = "retry-after" in exc.response.headers
        outcomes[f"{exc.status_code} {exc.code} retry-after={advised}"] += 1
    finally:
        await sdk.close()


def _metric(url: str, line_start: str) -> float:
    text = httpx.get(url + "/metrics", timeout=10).text
    return sum(
        float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(line_start)
    )


REQUEUED = 'gateway_failovers_total{pool="p",reason="requeued"}'


def test_requests_queued_in_the_engines_are_served_from_the_gateways_queue(
    start_gateway: GatewayFactory,
) -> None:
    with _fleet() as (a, b), start_gateway(_policy(a, b, ttft_s=60)) as url:

        async def burst() -> Counter[str]:
            outcomes: Counter[str] = Counter()
            await asyncio.gather(*(_ask(url, outcomes) for _ in range(6)))
            return outcomes

        outcomes = asyncio.run(burst())
        requeued = _metric(url, REQUEUED)
    aborts = a.replica.engine.counters.aborts + b.replica.engine.counters.aborts
    assert outcomes == Counter(ok=6)
    assert requeued >= 1, "nothing was taken back to the gateway's queue"
    assert aborts >= 1  # the engines dropped what the gateway took back


def test_a_request_taken_back_is_refused_by_its_deadline_with_retry_after(
    start_gateway: GatewayFactory,
) -> None:
    with _fleet() as (a, b), start_gateway(_policy(a, b, ttft_s=60)) as url:

        async def late() -> tuple[Counter[str], Counter[str]]:
            long: Counter[str] = Counter()
            short: Counter[str] = Counter()
            holders = [asyncio.ensure_future(_ask(url, long, tokens=4 * TOKENS)) for _ in "ab"]
            # Both engines busy with one long answer each; then requests that can only wait.
            await asyncio.to_thread(a.wait_until, lambda: a.replica.engine.num_running > 0)
            await asyncio.to_thread(b.wait_until, lambda: b.replica.engine.num_running > 0)
            asks = (_ask(url, short, deadline_ms=1500, tokens=8) for _ in range(4))
            await asyncio.gather(*asks)
            await asyncio.gather(*holders)
            return long, short

        long, short = asyncio.run(late())
        requeued = _metric(url, REQUEUED)
        shed = _metric(url, 'gateway_shed_total{cause="deadline",pool="p"')
    assert long == Counter(ok=2)
    assert short == Counter({"503 deadline_unmeetable retry-after=True": 4})
    assert requeued >= 1, "nothing was taken back to the gateway's queue"
    assert shed == 4
