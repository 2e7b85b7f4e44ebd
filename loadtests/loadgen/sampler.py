"""Periodic sampling of queue-depth gauges from Prometheus ``/metrics`` endpoints.

Algorithm: every ``interval_s`` GET each URL, parse the text exposition format, and record
per gauge name the sum over all label sets (a vLLM or gateway process may expose one series
per model or pool). Scrape failures are counted, not raised, so a dead endpoint cannot end
the run.

Parameters: ``urls``, ``gauges`` (metric names), ``interval_s``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import httpx2 as httpx

DEFAULT_GAUGES: tuple[str, ...] = (
    "vllm:num_requests_waiting",
    "vllm:num_requests_running",
    "tgi_queue_size",
)


@dataclass(frozen=True, slots=True)
class Sample:
    t_s: float
    url: str
    gauge: str
    value: float


@dataclass(slots=True)
class SamplerResult:
    samples: list[Sample] = field(default_factory=list)
    failures: int = 0


def parse_gauges(text: str, names: Iterable[str]) -> dict[str, float]:
    """Sum of every series of each wanted metric in a Prometheus text exposition."""
    wanted = set(names)
    totals: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name_part, _, value_part = line.rpartition(" ")
        name = name_part.split("{", 1)[0].strip()
        if name not in wanted:
            continue
        try:
            value = float(value_part)
        except ValueError:
            continue
        totals[name] = totals.get(name, 0.0) + value
    return totals


class GaugeSampler:
    """Scrapes until cancelled; read ``result`` afterwards."""

    def __init__(
        self,
        urls: Iterable[str],
        gauges: Iterable[str] = DEFAULT_GAUGES,
        *,
        interval_s: float = 0.5,
        now: Callable[[], float],
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._urls = list(urls)
        self._gauges = tuple(gauges)
        self._interval_s = interval_s
        self._now = now
        self._transport = transport
        self.result = SamplerResult()

    async def run(self) -> None:
        async with httpx.AsyncClient(timeout=2.0, transport=self._transport) as http:
            while True:
                await asyncio.gather(*(self._scrape(http, url) for url in self._urls))
                await asyncio.sleep(self._interval_s)

    async def _scrape(self, http: httpx.AsyncClient, url: str) -> None:
        t_s = self._now()
        try:
            response = await http.get(url)
            response.raise_for_status()
        except httpx.HTTPError:
            self.result.failures += 1
            return
        for gauge, value in parse_gauges(response.text, self._gauges).items():
            self.result.samples.append(Sample(t_s, url, gauge, value))


def read_counters(
    urls: Iterable[str], names: Iterable[str], timeout_s: float = 5.0
) -> dict[str, float]:
    """Sum of each named series over every URL's metrics, read once (blocking)."""
    wanted = tuple(names)
    totals = dict.fromkeys(wanted, 0.0)
    with httpx.Client(timeout=timeout_s, trust_env=False) as http:
        for url in urls:
            response = http.get(url)
            response.raise_for_status()
            for name, value in parse_gauges(response.text, wanted).items():
                totals[name] += value
    return totals
