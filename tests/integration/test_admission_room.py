"""Admission in front of a simulated vLLM engine (real uvicorn gateway, real openai SDK):
nothing the engine can serve is refused (issue 31).

- A ramp of closed-loop streams (4, then 64, then 128 users) onto one engine with room (256
  slots): every request answered 200; none refused, none failed.
- A cold burst (48 at once after an idle spell) onto an engine with 8 slots, default policy:
  every request answered 200; none refused, none timed out.

Both assert on refusals and errors only, not on timings: the machine may be slow.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Iterator

import httpx2 as httpx
import openai
import pytest

from tests.integration.conftest import GatewayFactory
from tests.support.sim_replica import SERVED, SimReplica, sim_replica

# The default policy: backends and models only (health timeouts generous: the simulated
# replica shares this process with the gateway and the clients).
POLICY = """
backends:
  - {{name: e0, url: "{url}", engine: vllm, model: {served}, pool: p}}
models:
  m: {{pool: p}}
health: {{timeout_s: 30}}
"""
CLIENT_TIMEOUT_S = 120.0  # far beyond any deadline: a timeout here is a request left hanging


def _policy(replica: SimReplica) -> str:
    return POLICY.format(url=replica.url, served=SERVED)


async def _ask(sdk: openai.AsyncOpenAI, outcomes: Counter[str], tokens: int) -> None:
    try:
        stream = await sdk.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "tell me about the sea " * 20}],
            max_tokens=tokens,
            stream=True,
        )
        async for _ in stream:
            pass
        outcomes["ok"] += 1
    except openai.APIStatusError as exc:
        outcomes[f"{exc.status_code} {exc.code}"] += 1
    except openai.APITimeoutError:
        outcomes["timeout"] += 1
    except openai.APIConnectionError as exc:
        outcomes[f"connection {type(exc.__cause__).__name__}"] += 1


async def _users(sdk: openai.AsyncOpenAI, users: int, requests: int) -> Counter[str]:
    """``users`` closed-loop streams sending ``requests`` in all."""
    outcomes: Counter[str] = Counter()
    left = [requests]

    async def user() -> None:
        while left[0] > 0:
            left[0] -= 1
            await _ask(sdk, outcomes, tokens=4)

    await asyncio.gather(*(user() for _ in range(users)))
    return outcomes


def _sdk(url: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(
        base_url=url + "/v1", api_key="unused", max_retries=0, timeout=CLIENT_TIMEOUT_S
    )


def _refusals(url: str) -> str:
    metrics = httpx.get(url + "/metrics", timeout=30).text
    return "\n".join(
        line
        for line in metrics.splitlines()
        if line.startswith("gateway_shed_total{") and not line.endswith(" 0.0")
    )


@pytest.fixture
def roomy() -> Iterator[SimReplica]:
    with sim_replica() as replica:  # 256 slots, an H100's pace
        yield replica


def test_a_ramp_onto_an_engine_with_room_is_never_refused(
    roomy: SimReplica, start_gateway: GatewayFactory
) -> None:
    with start_gateway(_policy(roomy)) as url:

        async def ramp() -> list[Counter[str]]:
            sdk = _sdk(url)
            try:
                return [await _users(sdk, c, n) for c, n in ((4, 40), (64, 192), (128, 256))]
            finally:
                await sdk.close()

        levels = asyncio.run(ramp())
        refusals = _refusals(url)
    assert levels == [Counter(ok=40), Counter(ok=192), Counter(ok=256)], refusals
    assert refusals == ""


@pytest.fixture
def small() -> Iterator[SimReplica]:
    with sim_replica(max_num_seqs=8) as replica:
        yield replica


def test_a_cold_burst_is_answered_in_full(small: SimReplica, start_gateway: GatewayFactory) -> None:
    with start_gateway(_policy(small)) as url:

        async def burst() -> tuple[Counter[str], Counter[str]]:
            sdk = _sdk(url)
            try:
                warm = await _users(sdk, 2, 6)  # the engine seen, its metrics read
                await asyncio.sleep(3.0)  # idle: reads go on, nothing in flight
                outcomes: Counter[str] = Counter()
                await asyncio.gather(*(_ask(sdk, outcomes, tokens=8) for _ in range(48)))
                return warm, outcomes
            finally:
                await sdk.close()

        started = time.monotonic()
        warm, outcomes = asyncio.run(burst())
        refusals = _refusals(url)
    assert warm == Counter(ok=6)
    assert outcomes == Counter(ok=48), (refusals, time.monotonic() - started)
    assert refusals == ""
