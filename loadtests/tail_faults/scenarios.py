"""The tail-fault benchmark's scenarios: a fleet (with or without faults) and the arrivals
every target gets.

- ``nofault``: three replicas of ``PROFILE`` (vLLM, speed 1), no faults; Poisson arrivals at
  ``rate`` req/s of the ``CHAT`` mix, far under the fleet's capacity. The baseline.
- ``stalls``: the same fleet and the same arrivals; each replica stalls ``stall_rate`` of
  its requests ``stall_s`` wall seconds before their first token.
- ``deaths``: the same fleet; each replica ends ``death_rate`` of its streams abruptly (the
  connection cut, no terminator) after ``death_after`` tokens; ``deaths_requests`` streamed
  chats at ``deaths_rate`` req/s.
- ``saturation``: the SLO benchmark's fleet (``loadtests/sim/fleets/slo.yaml``, two 4-slot
  CPU engines) under its straggler mix in bursts at ``multiple`` times capacity
  (``loadtests.slo.plans.bursty``), every replica stalling as in ``stalls``.

A replica's fault draws depend on the replica and the request (``loadtests/sim/faults.py``),
so every target meets the same fault rates, though not on the same requests when it routes
them elsewhere. Parameters: ``Sizes`` (rates, counts, durations), ``seed``, ports.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from loadtests.loadgen.arrivals import Bounds, Poisson
from loadtests.loadgen.distributions import LogNormal
from loadtests.loadgen.plan import plan_requests
from loadtests.loadgen.request import PlannedRequest
from loadtests.loadgen.workload import Synthetic, Workload, load_workload
from loadtests.sim.faults import Death, Faults, Stall
from loadtests.sim.fleet import FleetConfig, GroupConfig, load_fleet
from loadtests.slo import plans
from loadtests.slo.program import mix_capacity

ROOT = Path(__file__).resolve().parents[2]
SERVED_MODEL = "sim-tail-engine"  # a neutral name (see loadtests.peers.fleets.rename_model)
PROFILE = "qwen2.5-1.5b-h100"
SLO_FLEET = ROOT / "loadtests/sim/fleets/slo.yaml"
STRAGGLERS = ROOT / "loadtests/workloads/bursty_straggler.yaml"
SCENARIOS = ("nofault", "stalls", "deaths", "saturation")

# Chat requests: prompts around 200 tokens, answers around 64 (at least 16, so every answer
# is long enough for a death after 10 tokens).
CHAT = Workload(
    name="tail_chat",
    arrival=Poisson(rate=8.0),
    classes=[
        Synthetic(
            name="chat",
            prompt_tokens=LogNormal(median=200, sigma=0.6, min=16, max=1500),
            output_tokens=LogNormal(median=64, sigma=0.5, min=16, max=256),
        )
    ],
)


@dataclass(frozen=True, slots=True)
class Sizes:
    rate: float  # req/s of the nofault and stalls scenarios
    duration_s: float  # s of their arrivals
    stall_rate: float
    stall_s: float
    deaths_requests: int
    deaths_rate: float
    death_rate: float
    death_after: int
    multiple: float  # saturation: bursts at this multiple of capacity
    saturation_s: float
    client_timeout_s: float  # the client gives up without a first token by then


FULL = Sizes(8.0, 60.0, 0.04, 2.5, 240, 4.0, 0.2, 10, 3.0, 60.0, 30.0)
QUICK = Sizes(8.0, 12.0, 0.04, 2.5, 60, 6.0, 0.2, 10, 3.0, 15.0, 30.0)


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    title: str
    fleet: FleetConfig
    plan: tuple[PlannedRequest, ...]
    window_s: float
    baseline: str | None = None  # the scenario whose TTFT this one is compared with
    multiple: float | None = None
    note: str = ""


def tail_fleet(faults: Faults, base_port: int) -> FleetConfig:
    group = GroupConfig(name="tail", profile=PROFILE, served_model=SERVED_MODEL, replicas=3,
                        base_port=base_port, faults=faults)  # fmt: skip
    return FleetConfig(speed=1.0, groups=[group])


def _stalls(sizes: Sizes) -> Faults:
    return Faults(stall=Stall(rate=sizes.stall_rate, seconds=sizes.stall_s))


def _named(plan: list[PlannedRequest]) -> tuple[PlannedRequest, ...]:
    return tuple(dataclasses.replace(r, model=SERVED_MODEL) for r in plan)


def chat_plan(rate: float, seed: int, *, duration_s: float | None = None,
              requests: int | None = None) -> tuple[PlannedRequest, ...]:  # fmt: skip
    bounds = Bounds(duration_s=duration_s, max_requests=requests)
    return _named(plan_requests(CHAT, seed, bounds, rate))


def slo_fleet(faults: Faults, port_offset: int) -> FleetConfig:
    fleet = load_fleet(SLO_FLEET)
    groups = [g.model_copy(update={"base_port": g.base_port + port_offset,
                                   "served_model": SERVED_MODEL, "faults": faults})
              for g in fleet.groups]  # fmt: skip
    return fleet.model_copy(update={"groups": groups})


def saturation(sizes: Sizes, seed: int, port_offset: int) -> Scenario:
    fleet = slo_fleet(_stalls(sizes), port_offset)
    workload = load_workload(STRAGGLERS)
    capacity = mix_capacity(fleet, workload, seed)
    sc = plans.bursty(workload, seed, capacity.rps, sizes.multiple, sizes.saturation_s,
                      SERVED_MODEL)  # fmt: skip
    note = (f"slo.yaml fleet ({capacity.describe()}); straggler mix, {sc.note}, "
            f"{len(sc.plan)} requests in {sizes.saturation_s:g} s; stalls "
            f"{sizes.stall_rate:.0%} x {sizes.stall_s:g} s")  # fmt: skip
    return Scenario("saturation", f"Saturation: bursts at {sizes.multiple:g}x capacity, with "
                    "stalls", fleet, sc.plan, sizes.saturation_s, multiple=sizes.multiple,
                    note=note)  # fmt: skip


def build(names: list[str], sizes: Sizes, seed: int, base_port: int,
          slo_port_offset: int) -> list[Scenario]:  # fmt: skip
    """The scenarios asked for, in ``SCENARIOS`` order (a stall run needs its baseline)."""
    if "stalls" in names and "nofault" not in names:
        names = ["nofault", *names]
    steady = chat_plan(sizes.rate, seed, duration_s=sizes.duration_s)
    load = f"{len(steady)} streamed chats, Poisson {sizes.rate:g} req/s for {sizes.duration_s:g} s"
    out: list[Scenario] = []
    for name in SCENARIOS:
        if name not in names:
            continue
        if name == "nofault":
            out.append(Scenario("nofault", "No faults (baseline)", tail_fleet(Faults(), base_port),
                                steady, sizes.duration_s, note=f"3 replicas; {load}"))  # fmt: skip
        elif name == "stalls":
            note = (f"3 replicas, each stalling {sizes.stall_rate:.0%} of its requests "
                    f"{sizes.stall_s:g} s before the first token; {load}")  # fmt: skip
            out.append(Scenario("stalls", "Stalls before the first token",
                                tail_fleet(_stalls(sizes), base_port), steady, sizes.duration_s,
                                baseline="nofault", note=note))  # fmt: skip
        elif name == "deaths":
            faults = Faults(death=Death(rate=sizes.death_rate, after_tokens=sizes.death_after))
            plan = chat_plan(sizes.deaths_rate, seed + 1, requests=sizes.deaths_requests)
            note = (f"3 replicas, each cutting {sizes.death_rate:.0%} of its streams after "
                    f"{sizes.death_after} tokens; {len(plan)} streamed chats, Poisson "
                    f"{sizes.deaths_rate:g} req/s")  # fmt: skip
            out.append(Scenario("deaths", "Deaths mid-stream", tail_fleet(faults, base_port),
                                plan, plan[-1].at_s, note=note))  # fmt: skip
        else:
            out.append(saturation(sizes, seed, slo_port_offset))
    return out
