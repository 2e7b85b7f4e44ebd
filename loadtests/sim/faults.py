"""Faults a simulated replica injects: stalls before the first token and deaths mid-stream.

Algorithm: each request draws one number per fault kind, ``u = H(seed, replica, kind, key)``
in ``[0, 1)`` from a BLAKE2b hash, where ``key`` is the request's rendered prompt and its
seed; the fault hits when ``u < rate``. So a request's fate is fixed (the same request on the
same replica always meets the same faults, with no RNG state shared between requests), and
replicas draw independently (a request stalled on one is stalled elsewhere only by chance).

- ``stall``: a hit request waits ``seconds`` of WALL-CLOCK time (not scaled by the fleet's
  speed: a pause is not the hardware's pace) after its response head and before it reaches
  the engine, so before its first token; ``never``: it waits until its client leaves. The
  wait costs the engine nothing (the request is not queued there meanwhile).
- ``death``: a hit streaming answer (chat or text completion, ``stream: true``) that is
  longer than ``after_tokens`` is ended right after the chunk carrying its
  ``after_tokens``-th token: ``cut`` closes the connection without the SSE terminator (no
  error event, no ``[DONE]``), as a dying process's socket would; ``hang`` stops sending and
  holds the connection open until the client leaves (a stall past any idle limit); ``exit``
  ends the whole simulator process at once (``os._exit``; every replica it serves dies with
  it: run a fleet of one replica per process for a single replica's death).

``replicas`` restricts a group's faults to some of its replicas (their indices in the group).
Every replica counts what it saw (``sim_requests_total``, ``sim_stalls_total``,
``sim_stalls_abandoned_total``: aborted by their client during the stall,
``sim_stream_deaths_total``, ``sim_continuations_total``), exposed on its ``/metrics``.

Parameters: ``rate`` of each kind, ``seconds``, ``after_tokens``, ``mode``, ``seed``.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import os
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Literal, NoReturn

from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector
from pydantic import BaseModel, ConfigDict, Field

DeathMode = Literal["cut", "hang", "exit"]
EXIT_STATUS = 70  # what a replica killed by its ``exit`` fault exits with


class StreamCut(Exception):
    """A stream's fate: its connection is closed now, its response left incomplete."""


class Stall(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    rate: float = Field(default=0.0, ge=0, le=1)
    seconds: float | Literal["never"] = 2.5


class Death(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    rate: float = Field(default=0.0, ge=0, le=1)
    after_tokens: int = Field(default=10, ge=0)
    mode: DeathMode = "cut"


class Faults(BaseModel):
    """A group's faults (YAML ``faults:`` of a fleet group; none by default)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    stall: Stall = Stall()
    death: Death = Death()
    seed: int = 0
    replicas: list[int] | None = None  # indices in the group; None: every replica

    def applies_to(self, index: int) -> bool:
        return self.replicas is None or index in self.replicas


NO_FAULTS = Faults()


def draw(seed: int, replica: str, kind: str, key: str) -> float:
    """A number in ``[0, 1)`` fixed by its inputs."""
    text = f"{seed}\x00{replica}\x00{kind}\x00{key}".encode()
    digest = hashlib.blake2b(text, digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2.0**64


def request_key(prompt: str, seed: int) -> str:
    return f"{seed}\x00{prompt}"


@dataclass(frozen=True, slots=True)
class Fate:
    """What the faults do to one request."""

    stall_s: float = 0.0  # wall seconds before it reaches the engine; inf: never
    die_after: int | None = None  # tokens sent before its stream dies; None: it does not
    death_mode: DeathMode = "cut"


def fate(faults: Faults, replica: str, key: str) -> Fate:
    """The faults' decision for one request on one replica (pure)."""
    stall, death = faults.stall, faults.death
    stall_s = 0.0
    if stall.rate and draw(faults.seed, replica, "stall", key) < stall.rate:
        stall_s = math.inf if stall.seconds == "never" else float(stall.seconds)
    dies = death.rate and draw(faults.seed, replica, "death", key) < death.rate
    return Fate(stall_s, death.after_tokens if dies else None, death.mode)


def _exit(status: int) -> NoReturn:
    os._exit(status)


@dataclass
class FaultCounts:
    requests: int = 0  # generation requests received (every route that runs the engine)
    stalls: int = 0
    stalls_abandoned: int = 0  # stalled requests whose client left during the stall
    deaths: dict[str, int] = field(default_factory=lambda: {"cut": 0, "hang": 0, "exit": 0})
    # Requests whose prompt ends with this model's own answer so far: continued exactly.
    continuations: int = 0


@dataclass
class FaultInjector:
    """One replica's faults, its counters, and the effects (injectable in tests)."""

    faults: Faults
    replica: str
    counts: FaultCounts = field(default_factory=FaultCounts)
    pause: Callable[[float], Awaitable[None]] = asyncio.sleep
    exit: Callable[[int], NoReturn] = _exit

    def admit(self, prompt: str, seed: int, *, continued: bool) -> Fate:
        """Count a generation request and return its fate."""
        self.counts.requests += 1
        self.counts.continuations += int(continued)
        decided = fate(self.faults, self.replica, request_key(prompt, seed))
        self.counts.stalls += int(decided.stall_s > 0)
        return decided

    def died(self, mode: DeathMode) -> None:
        self.counts.deaths[mode] += 1


class FaultCollector(Collector):
    """The counters above in Prometheus text, read at scrape time."""

    def __init__(self, counts: FaultCounts) -> None:
        self._counts = counts

    def collect(self) -> Iterator[Metric]:
        c = self._counts
        yield CounterMetricFamily("sim_requests", "Generation requests received.", value=c.requests)
        yield CounterMetricFamily("sim_stalls", "Requests stalled by a fault.", value=c.stalls)
        yield CounterMetricFamily(
            "sim_stalls_abandoned",
            "Stalled requests aborted by their client during the stall (a hedge's loser).",
            value=c.stalls_abandoned,
        )
        deaths = CounterMetricFamily("sim_stream_deaths", "Streams ended by a fault.",
                                     labels=["mode"])  # fmt: skip
        for mode, n in sorted(c.deaths.items()):
            deaths.add_metric([mode], n)
        yield deaths
        yield CounterMetricFamily(
            "sim_continuations",
            "Requests continuing this model's own answer (continued exactly).",
            value=c.continuations,
        )
