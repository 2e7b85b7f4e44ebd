"""What the engine and the gateway said during a run, polled on the client's clock.

Algorithm: one coroutine per source, until cancelled: every ``engine_interval_s`` (50 ms) GET
the engine's ``/metrics`` and keep ``vllm:num_requests_waiting`` and
``vllm:num_requests_running`` (summed over series); every ``gateway_interval_s`` (250 ms)
GET the gateway's ``/metrics`` and keep each pool's state (``gateway_pool_state{pool,state}``
= 1). Each sample carries the time its answer came (``now``: the load client's clock, so
samples and request records share one time line). A failed scrape is counted, not raised.
``first_waiting`` and ``first_state`` read the samples (pure).

Parameters: ``engine_url``, ``gateway_url`` (None: not polled), the intervals, ``now``.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import httpx2 as httpx

from loadtests.loadgen.sampler import parse_gauges

WAITING = "vllm:num_requests_waiting"
RUNNING = "vllm:num_requests_running"
_STATE = re.compile(r"^gateway_pool_state\{([^}]*)\}\s+(\S+)")
_LABEL = re.compile(r'(\w+)="([^"]*)"')


@dataclass(frozen=True, slots=True)
class EngineSample:
    t_s: float
    waiting: float
    running: float


@dataclass(frozen=True, slots=True)
class StateSample:
    t_s: float
    states: dict[str, str]  # pool -> nominal | saturated | overloaded


@dataclass(slots=True)
class Watched:
    engine: list[EngineSample] = field(default_factory=list)
    gateway: list[StateSample] = field(default_factory=list)
    failures: int = 0


def pool_states(text: str) -> dict[str, str]:
    """Each pool's current state from a gateway's ``/metrics`` text."""
    states = {}
    for line in text.splitlines():
        match = _STATE.match(line)
        if match is None or float(match.group(2)) != 1.0:
            continue
        labels = dict(_LABEL.findall(match.group(1)))
        if "pool" in labels and "state" in labels:
            states[labels["pool"]] = labels["state"]
    return states


def first_waiting(samples: Sequence[EngineSample], after_s: float = 0.0) -> float | None:
    """When the engine first reported a request waiting (at or after ``after_s``)."""
    return next((s.t_s for s in samples if s.t_s >= after_s and s.waiting > 0), None)


def first_state(samples: Sequence[StateSample], after_s: float = 0.0) -> float | None:
    """When the gateway first showed a pool other than nominal (at or after ``after_s``)."""
    return next((s.t_s for s in samples if s.t_s >= after_s
                 and any(v != "nominal" for v in s.states.values())), None)  # fmt: skip


def peak_waiting(samples: Sequence[EngineSample], start_s: float, end_s: float) -> float | None:
    within = [s.waiting for s in samples if start_s <= s.t_s < end_s]
    return max(within) if within else None


class Watcher:
    """Polls until cancelled; read ``watched`` afterwards."""

    def __init__(
        self,
        engine_url: str,
        gateway_url: str | None,
        now: Callable[[], float],
        *,
        engine_interval_s: float = 0.05,
        gateway_interval_s: float = 0.25,
    ) -> None:
        self._engine_url = engine_url.rstrip("/") + "/metrics"
        self._gateway_url = None if gateway_url is None else gateway_url.rstrip("/") + "/metrics"
        self._now = now
        self._intervals = (engine_interval_s, gateway_interval_s)
        self.watched = Watched()

    async def run(self) -> None:
        async with httpx.AsyncClient(timeout=2.0, trust_env=False) as http:
            loops = [self._engine(http)]
            if self._gateway_url is not None:
                loops.append(self._gateway(http, self._gateway_url))
            await asyncio.gather(*loops)

    async def _get(self, http: httpx.AsyncClient, url: str) -> str | None:
        try:
            response = await http.get(url)
            response.raise_for_status()
        except httpx.HTTPError:
            self.watched.failures += 1
            return None
        return response.text

    async def _engine(self, http: httpx.AsyncClient) -> None:
        while True:
            text = await self._get(http, self._engine_url)
            t_s = self._now()
            if text is not None:
                got = parse_gauges(text, (WAITING, RUNNING))
                self.watched.engine.append(
                    EngineSample(t_s, got.get(WAITING, 0.0), got.get(RUNNING, 0.0))
                )
            await asyncio.sleep(self._intervals[0])

    async def _gateway(self, http: httpx.AsyncClient, url: str) -> None:
        while True:
            text = await self._get(http, url)
            t_s = self._now()
            if text is not None:
                self.watched.gateway.append(StateSample(t_s, pool_states(text)))
            await asyncio.sleep(self._intervals[1])
