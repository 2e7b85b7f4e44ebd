"""Sending a scenario's requests to one target, with clients that may honour Retry-After.

Algorithm: the warm-up (if any) runs open loop to its last answer, then the driver waits
``idle_s``, then the scenario's plan runs open loop (``loadtests.loadgen.client.LoadClient``:
each request at its planned time, whatever earlier ones do). In the Retry-After mode a
refused request whose answer advised a delay of at most ``retry_cap_s`` is sent once more
after that delay, by the same client, as a user's retry would; the retry's record is kept
apart (``retries``) so the row still counts first attempts.

Parameters: ``first_token_timeout_s`` (the client gives up on a request without its first token
by then: a client timeout; once it streams, it waits ``STREAM_ALLOWANCE_S`` more for the
rest), ``retry_cap_s``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

from loadtests.loadgen.client import ClientConfig, LoadClient, Target
from loadtests.loadgen.record import RequestRecord
from loadtests.loadgen.request import PlannedRequest
from loadtests.slo.plans import Scenario
from loadtests.slo.rows import advised_delay_s

STREAM_ALLOWANCE_S = 120.0


class RetryAfterClient(LoadClient):
    """A ``LoadClient`` whose users retry a refusal once, after its Retry-After."""

    def __init__(self, config: ClientConfig, retry_cap_s: float) -> None:
        super().__init__(config)
        self._cap_s = retry_cap_s
        self.retries: dict[int, RequestRecord] = {}

    async def send(self, request: PlannedRequest) -> RequestRecord:
        first = await super().send(request)
        delay = advised_delay_s(first)
        if delay is not None and delay <= self._cap_s:
            await asyncio.sleep(delay)
            self.retries[request.index] = await super().send(request)
        return first


@dataclass(slots=True)
class Outcome:
    records: list[RequestRecord]  # the plan's first attempts, in plan order
    retries: dict[int, RequestRecord] = field(default_factory=dict)
    warmup: list[RequestRecord] = field(default_factory=list)


async def _run(client: LoadClient, plan: Sequence[PlannedRequest]) -> list[RequestRecord]:
    try:
        return await client.run(plan)
    finally:
        await client.aclose()


async def drive(
    scenario: Scenario, targets: Sequence[Target], first_token_timeout_s: float, retry_cap_s: float
) -> Outcome:
    """Run the scenario against ``targets`` (round-robin by request index)."""
    config = ClientConfig(targets=list(targets), first_token_timeout_s=first_token_timeout_s,
                          request_timeout_s=first_token_timeout_s + STREAM_ALLOWANCE_S)  # fmt: skip
    warmup = await _run(LoadClient(config), scenario.warmup) if scenario.warmup else []
    if scenario.idle_s > 0:
        await asyncio.sleep(scenario.idle_s)
    if scenario.honour_retry_after:
        client = RetryAfterClient(config, retry_cap_s)
        return Outcome(await _run(client, scenario.plan), client.retries, warmup)
    return Outcome(await _run(LoadClient(config), scenario.plan), warmup=warmup)
