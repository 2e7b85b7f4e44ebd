"""Open-loop arrival processes: the scheduled send offsets (seconds from the run start).

Algorithms and parameters:

- ``poisson``: exponential inter-arrival gaps with mean ``1 / rate``.
- ``onoff``: a bursty source alternating ``on_s`` seconds at Poisson rate ``rate_on`` with
  ``off_s`` seconds at ``rate_off`` (0 = silent); the process is restarted at every phase
  boundary, which is exact for Poisson because it is memoryless.
- ``trace``: replay of a JSONL file whose lines are ``{"t": seconds, ...request fields}``;
  offsets are the ``t`` values in file order after a stable sort, so ties keep file order.

Every process stops at ``duration_s`` and/or after ``max_requests`` arrivals, whichever
comes first; at least one bound must be given.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Arrival(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Poisson(_Arrival):
    kind: Literal["poisson"] = "poisson"
    rate: float = Field(gt=0)

    def with_rate(self, rate: float) -> Poisson:
        return self.model_copy(update={"rate": rate})


class OnOff(_Arrival):
    kind: Literal["onoff"] = "onoff"
    rate_on: float = Field(gt=0)
    rate_off: float = Field(default=0.0, ge=0)
    on_s: float = Field(gt=0)
    off_s: float = Field(gt=0)

    def with_rate(self, rate: float) -> OnOff:
        """Scale both phases so the long-run mean rate becomes ``rate``."""
        scale = rate / self.mean_rate()
        return self.model_copy(
            update={"rate_on": self.rate_on * scale, "rate_off": self.rate_off * scale}
        )

    def mean_rate(self) -> float:
        period = self.on_s + self.off_s
        return (self.rate_on * self.on_s + self.rate_off * self.off_s) / period


class Trace(_Arrival):
    kind: Literal["trace"] = "trace"
    path: str

    def with_rate(self, rate: float) -> Trace:
        return self


ArrivalSpec = Annotated[Poisson | OnOff | Trace, Field(discriminator="kind")]


class Bounds(BaseModel):
    """When a run stops scheduling arrivals."""

    model_config = ConfigDict(frozen=True)
    duration_s: float | None = Field(default=None, gt=0)
    max_requests: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _one_bound(self) -> Bounds:
        if self.duration_s is None and self.max_requests is None:
            raise ValueError("give duration_s and/or max_requests")
        return self

    def admits(self, index: int, offset: float) -> bool:
        if self.max_requests is not None and index >= self.max_requests:
            return False
        return self.duration_s is None or offset < self.duration_s


def poisson_offsets(rate: float, rng: random.Random, start: float = 0.0) -> Iterator[float]:
    """Unbounded Poisson arrival offsets after ``start``."""
    t = start
    while True:
        t += rng.expovariate(rate)
        yield t


def onoff_offsets(spec: OnOff, rng: random.Random) -> Iterator[float]:
    """Unbounded on/off arrival offsets; phase ``k`` starts at ``k * period`` (on first)."""
    phase_start = 0.0
    while True:
        for rate, length in ((spec.rate_on, spec.on_s), (spec.rate_off, spec.off_s)):
            end = phase_start + length
            if rate > 0:
                for t in poisson_offsets(rate, rng, phase_start):
                    if t >= end:
                        break
                    yield t
            phase_start = end


def bounded(offsets: Iterator[float], bounds: Bounds) -> list[float]:
    """The prefix of ``offsets`` allowed by ``bounds``."""
    out: list[float] = []
    for t in offsets:
        if not bounds.admits(len(out), t):
            break
        out.append(t)
    return out


def schedule(spec: Poisson | OnOff, rng: random.Random, bounds: Bounds) -> list[float]:
    """Scheduled offsets of a synthetic arrival process."""
    if isinstance(spec, Poisson):
        return bounded(poisson_offsets(spec.rate, rng), bounds)
    return bounded(onoff_offsets(spec, rng), bounds)


def mean_gap(offsets: list[float]) -> float:
    """Mean inter-arrival gap (``inf`` for fewer than two arrivals)."""
    if len(offsets) < 2:
        return math.inf
    return (offsets[-1] - offsets[0]) / (len(offsets) - 1)
