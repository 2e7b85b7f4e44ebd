"""The scenarios' arrivals: every target of a scenario gets the same planned requests.

- ``bursty``: the straggler workload's on/off arrivals with the burst (on-phase) rate at
  ``multiple`` times capacity, the peer comparison's convention (its mean is 0.37x that: at
  1x, bursts just fill the fleet and the quiet phases drain it); both phases scale together.
- ``steady``: the same request mix on Poisson arrivals at ``multiple`` times capacity, sent by
  clients that honour Retry-After (retry once after the advised delay).
- ``cold``: optional warm-up traffic (Poisson at half capacity, for ``warmup_s``), then
  ``idle_s`` without a request once the warm-up is answered, then ``burst`` requests of the
  mix at once; rows count the burst only.
- ``azure``: a head of the Azure 2023 trace time-scaled so its mean rate is ``multiple``
  times the fleet's capacity on that head's own token counts (``loadtests.slo.azure``).

Every request asks for ``model`` (the model every target serves under one name). Parameters:
``seed`` (arrivals and content), ``capacity_rps`` (``loadtests.slo.capacity``).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from dataclasses import dataclass

from loadtests.loadgen.arrivals import Bounds, OnOff, Poisson, bounded, poisson_offsets
from loadtests.loadgen.plan import plan_requests, synthesise
from loadtests.loadgen.request import PlannedRequest
from loadtests.loadgen.workload import Workload
from loadtests.slo.azure import TraceRow, mean_rate, time_scaled, trace_requests


@dataclass(frozen=True, slots=True)
class Scenario:
    """One row's arrivals, the same for every target."""

    name: str  # bursty, steady, cold, azure-conv, azure-code
    load: str  # how the row names its load: 2x, 300 at once, ...
    multiple: float | None  # arrivals over capacity (None: not a rate)
    plan: tuple[PlannedRequest, ...]
    window_s: float  # span of the counted arrivals
    offered_rps: float | None = None  # mean arrival rate of the plan
    warmup: tuple[PlannedRequest, ...] = ()  # sent and answered first, not counted
    idle_s: float = 0.0  # pause after the warm-up (or the target's start) before ``plan``
    honour_retry_after: bool = False
    note: str = ""


def _with_model(plan: Sequence[PlannedRequest], model: str) -> tuple[PlannedRequest, ...]:
    return tuple(dataclasses.replace(r, model=model) for r in plan)


def _window(plan: Sequence[PlannedRequest]) -> float:
    return plan[-1].at_s - plan[0].at_s if plan else 0.0


def bursty(workload: Workload, seed: int, capacity_rps: float, multiple: float,
           duration_s: float, model: str) -> Scenario:  # fmt: skip
    arrival = workload.arrival
    if not isinstance(arrival, OnOff):
        raise ValueError(f"workload {workload.name}: expected on/off arrivals")
    mean = multiple * capacity_rps * arrival.mean_rate() / arrival.rate_on
    plan = plan_requests(workload, seed, Bounds(duration_s=duration_s), mean)
    return Scenario("bursty", f"{multiple:g}x", multiple, _with_model(plan, model),
                    duration_s, mean,
                    note=f"bursts at {multiple * capacity_rps:.2f} req/s")  # fmt: skip


def steady(workload: Workload, seed: int, capacity_rps: float, multiple: float,
           duration_s: float, model: str) -> Scenario:  # fmt: skip
    rate = multiple * capacity_rps
    poisson = workload.model_copy(update={"arrival": Poisson(rate=rate)})
    plan = plan_requests(poisson, seed, Bounds(duration_s=duration_s))
    return Scenario("steady", f"{multiple:g}x", multiple, _with_model(plan, model), duration_s,
                    rate, honour_retry_after=True)  # fmt: skip


def cold(workload: Workload, seed: int, capacity_rps: float, burst: int, idle_s: float,
         warmup_s: float, model: str) -> Scenario:  # fmt: skip
    warm_rate = 0.5 * capacity_rps
    warm_bounds = Bounds(duration_s=warmup_s) if warmup_s > 0 else None
    offsets = (
        bounded(poisson_offsets(warm_rate, random.Random(f"{seed}:warmup")), warm_bounds)
        if warm_bounds
        else []
    )
    # One synthesis for both, so the burst's prompts differ from the warm-up's.
    both = synthesise(workload, seed, [*offsets, *([0.0] * burst)])
    warm, shot = both[: len(offsets)], both[len(offsets) :]
    shot = [dataclasses.replace(r, index=i) for i, r in enumerate(shot)]
    idle = f" after {idle_s:g} s idle" + (f" (warm-up {warmup_s:g} s)" if warmup_s else "")
    return Scenario("cold", f"{burst} at once{idle}", None, _with_model(shot, model), 0.0,
                    warmup=_with_model(warm, model), idle_s=idle_s)  # fmt: skip


def azure(trace: str, rows: Sequence[TraceRow], seed: int, capacity_rps: float,
          multiple: float, model: str, max_model_len: int) -> Scenario:  # fmt: skip
    rate = multiple * capacity_rps
    scaled = time_scaled(rows, rate)
    plan, clipped = trace_requests(scaled, model, seed, max_model_len, trace)
    factor = mean_rate(rows) / rate
    note = f"trace time x{factor:.2f}, {len(plan)} requests"
    if clipped.requests:
        note += f"; {clipped.requests} prompts cut to fit {max_model_len} tokens"
    return Scenario(f"azure-{trace}", f"{multiple:g}x", multiple, tuple(plan), _window(plan),
                    rate, note=note)  # fmt: skip
