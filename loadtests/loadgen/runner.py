"""One load run: the open-loop client plus optional gauge sampling, then the summary.

Reports are written by the caller after the event loop has finished the run, so file and
plot work never delays a scheduled send.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import httpx2 as httpx

from loadtests.loadgen.client import ClientConfig, Clock, LoadClient
from loadtests.loadgen.record import RequestRecord
from loadtests.loadgen.request import PlannedRequest
from loadtests.loadgen.sampler import DEFAULT_GAUGES, GaugeSampler, Sample


@dataclass(frozen=True, slots=True)
class RunOptions:
    client: ClientConfig
    metrics_urls: Sequence[str] = ()
    gauges: Sequence[str] = DEFAULT_GAUGES
    sample_interval_s: float = 0.5


@dataclass(slots=True)
class RunResult:
    records: list[RequestRecord]
    samples: list[Sample] = field(default_factory=list)
    scrape_failures: int = 0
    wall_s: float = 0.0


async def execute(
    plan: Sequence[PlannedRequest],
    options: RunOptions,
    *,
    clock: Clock = time.perf_counter,
    transport: httpx.AsyncBaseTransport | None = None,
) -> RunResult:
    """Run ``plan`` to completion; sampling (if any) stops when the last request ends."""
    client = LoadClient(options.client, clock=clock, transport=transport)
    sampler = GaugeSampler(
        options.metrics_urls,
        options.gauges,
        interval_s=options.sample_interval_s,
        now=client.now,
    )
    started = clock()
    sampling = asyncio.create_task(sampler.run()) if options.metrics_urls else None
    try:
        records = await client.run(plan)
    finally:
        if sampling is not None:
            sampling.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sampling
        await client.aclose()
    return RunResult(
        records=records,
        samples=sampler.result.samples,
        scrape_failures=sampler.result.failures,
        wall_s=clock() - started,
    )
