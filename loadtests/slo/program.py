"""What one benchmark run does, planned before anything starts: the scenarios' sections (titles
and notes for the report) and their loads in run order, and how long it should take.

``Sizes`` are the knobs of a run (``FULL`` by default, ``QUICK`` for ``--quick``). The
straggler mix's scenarios (bursty, steady, cold) share one capacity, computed on a sample of
``MIX_SAMPLE`` of its requests; each Azure trace's head has its own, from its token counts.
A missing trace file gives a section that says so and no load.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from loadtests.loadgen.plan import synthesise
from loadtests.loadgen.workload import Workload
from loadtests.sim.fleet import FleetConfig, group_profile
from loadtests.slo import azure, plans
from loadtests.slo.capacity import Capacity, fleet_capacity
from loadtests.slo.ramps import SHAPES, Ramp, ramp
from loadtests.slo.refuser import NAME as REFUSER
from loadtests.slo.report import Section

MIX_SAMPLE = 2000
STARTUP_S = {"litellm": 25.0}  # rough start-up of a run, for the estimate
STARTUP_S_OTHERS = 4.0
STREAM_S = 15.0  # the longest answers here stream for ~10 s after their first token


@dataclass(frozen=True, slots=True)
class Sizes:
    """How big each scenario is."""

    multiples: str  # bursty loads, times capacity
    azure_multiples: str
    bursty_s: float  # seconds of arrivals
    steady_s: float
    cold_requests: int
    cold_idle_s: float
    cold_warmup_s: float
    azure_requests: int  # the head of each trace
    client_timeout_s: float
    capacity_check_s: float  # 0: no check
    ramp_levels: str  # users:requests,... (loadtests.slo.ramps)
    ramp8_levels: str
    replicas_s: float  # seconds of bursty 3x arrivals for the replicas row
    shift_levels: str  # users:requests[@tokens],... (loadtests.slo.ramps)


FULL = Sizes("0.5,1,2,3,5", "1,2,4", 60.0, 60.0, 300, 60.0, 10.0, 120, 30.0, 60.0,
             "4:200,64:512,200:1000", "4:40,16:160,64:384", 60.0,
             "16:40@6000,64:512")  # fmt: skip
# Every scenario and target, smaller: two bursty loads, one Azure load, a burst of 40.
QUICK = Sizes("1,3", "2", 15.0, 10.0, 40, 5.0, 0.0, 40, 10.0, 0.0,
              "4:40,64:128,200:400", "4:16,16:64,64:160", 20.0,
              "16:32@6000,64:256")  # fmt: skip
REPLICAS_MULTIPLE = 3.0
# Rough per-request seconds for the plan's estimate: a slot's hold, and the machine's cost.
RAMP_HOLD_S = {"ramp": 0.02, "ramp8": 1.2, "shift": 1.5}
RAMP_SLOTS = {"ramp": 256, "ramp8": 8, "shift": 2}
CLIENT_S_PER_REQUEST = 0.01


@dataclass(frozen=True, slots=True)
class Mix:
    """The straggler workload's scenarios and how they are loaded."""

    workload: Workload
    capacity: Capacity
    seed: int
    model: str
    steady_multiple: float
    retry_cap_s: float


@dataclass
class Program:
    sections: list[Section] = field(default_factory=list)
    loads: list[tuple[Section, plans.Scenario]] = field(default_factory=list)
    ramps: list[tuple[Section, Ramp]] = field(default_factory=list)
    replicas: list[tuple[Section, plans.Scenario]] = field(default_factory=list)
    replicas_cluster: bool = False  # also two gateways sharing Redis

    def runs(self, targets: Sequence[str]) -> list[tuple[Section, plans.Scenario, list[str]]]:
        """Every open-loop load (the replicas row's included) with the targets it runs on."""
        out = [(section, sc, targets_of(sc, targets)) for section, sc in self.loads]
        twice = replica_targets(targets, self.replicas_cluster)
        return out + [(section, sc, twice) for section, sc in self.replicas]

    def seconds(self, targets: Sequence[str], timeout_s: float) -> float:
        """At most: every run's arrivals, idle time, wait for its last answers and start-up;
        for a ramp, a rough guess from its slots and the machine's cost per request."""
        total = 0.0
        for _, sc, names in self.runs(targets):
            wait = timeout_s + STREAM_S
            warm = sc.warmup[-1].at_s + wait if sc.warmup else 0.0
            per = warm + sc.idle_s + sc.window_s + wait
            total += sum(per + STARTUP_S.get(t, STARTUP_S_OTHERS) for t in names)
        for _, planned in self.ramps:
            name = planned.shape.name
            per = sum(len(lv.plan) * (RAMP_HOLD_S[name] / min(lv.concurrency, RAMP_SLOTS[name])
                                      + CLIENT_S_PER_REQUEST) for lv in planned.levels)  # fmt: skip
            total += sum(per + STARTUP_S.get(t, STARTUP_S_OTHERS)
                         for t in ramp_targets(targets))  # fmt: skip
        return total


def expects_refusals(sc: plans.Scenario) -> bool:
    """Loads where some refusals are expected: above capacity, or the cold burst."""
    return sc.multiple is None or sc.multiple > 1.0


def targets_of(sc: plans.Scenario, targets: Sequence[str]) -> list[str]:
    """The refuse-everything reference only where refusals are expected."""
    return [t for t in targets if t != REFUSER or expects_refusals(sc)]


def ramp_targets(targets: Sequence[str]) -> list[str]:
    """Direct, the gateway and the peers (nginx without its cap: a plain proxy)."""
    return [t for t in targets if t in ("direct", "gateway", "litellm", "vllm-router", "nginx")]


def replica_targets(targets: Sequence[str], cluster: bool = False) -> list[str]:
    """Direct (if asked), one gateway, two gateways (and two sharing Redis)."""
    return [*(["direct"] if "direct" in targets else []), "gateway", "gateway-x2",
            *(["gateway-x2-cluster"] if cluster else [])]  # fmt: skip


def mix_capacity(fleet: FleetConfig, workload: Workload, seed: int) -> Capacity:
    sample = synthesise(workload, seed, [float(i) for i in range(MIX_SAMPLE)])
    return fleet_capacity(fleet, sample)


def floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x.strip()]


def add_bursty(program: Program, mix: Mix, sizes: Sizes) -> None:
    cap = mix.capacity
    section = Section("bursty", "Bursty straggler workload (on/off bursts, 20% of prompts "
                      "2,000 words)", [f"capacity on this mix: {cap.describe()}"])  # fmt: skip
    for m in floats(sizes.multiples):
        sc = plans.bursty(mix.workload, mix.seed, cap.rps, m, sizes.bursty_s, mix.model)
        program.loads.append((section, sc))
        section.notes.append(f"{sc.load}: {sc.note}, mean {sc.offered_rps:.2f} req/s, "
                             f"{len(sc.plan)} requests in {sizes.bursty_s:g} s")  # fmt: skip
    program.sections.append(section)


def add_steady(program: Program, mix: Mix, sizes: Sizes) -> None:
    m = mix.steady_multiple
    sc = plans.steady(mix.workload, mix.seed, mix.capacity.rps, m, sizes.steady_s, mix.model)
    notes = [f"capacity: {mix.capacity.describe()}",
             f"{sc.offered_rps:.2f} req/s, {len(sc.plan)} requests; a refused client retries "
             f"once after the advised delay if it is at most {mix.retry_cap_s:g} s"]  # fmt: skip
    section = Section("steady", f"Steady {m:g}x overload (Poisson), clients honour Retry-After",
                      notes)  # fmt: skip
    program.sections.append(section)
    program.loads.append((section, sc))


def add_cold(program: Program, mix: Mix, sizes: Sizes) -> None:
    sc = plans.cold(mix.workload, mix.seed, mix.capacity.rps, sizes.cold_requests,
                    sizes.cold_idle_s, sizes.cold_warmup_s, mix.model)  # fmt: skip
    notes = [
        f"{sc.load}; capacity {mix.capacity.describe()}",
        f"warm-up: {len(sc.warmup)} requests, answered before the idle time starts",
    ]
    section = Section("cold", "Cold burst", notes)
    program.sections.append(section)
    program.loads.append((section, sc))


def add_azure(program: Program, fleet: FleetConfig, sizes: Sizes, trace: str, data: Path,
              minutes: float | None, seed: int, model: str) -> None:  # fmt: skip
    max_len = group_profile(fleet.groups[0]).max_model_len
    path = azure.trace_path(data, trace)
    section = Section(f"azure-{trace}", f"Azure LLM inference trace 2023: {trace}")
    program.sections.append(section)
    if not path.exists():
        section.notes.append(f"DATA ABSENT: {path} not found; not run (see --data)")
        sys.stderr.write(f"azure {trace}: data absent ({path}); scenario skipped\n")
        return
    head = azure.first(azure.parse_trace(path.read_text()), minutes, sizes.azure_requests)
    reqs, _ = azure.trace_requests(head, model, seed, max_len, trace)
    cap = fleet_capacity(fleet, reqs)
    section.notes += [f"{path}: first {len(head)} requests ({head[-1].at_s:,.0f} s of trace, "
                      f"{azure.mean_rate(head):.2f} req/s)",
                      f"capacity on them: {cap.describe()}"]  # fmt: skip
    for m in floats(sizes.azure_multiples):
        sc = plans.azure(trace, head, seed, cap.rps, m, model, max_len)
        section.notes.append(f"{sc.load}: {sc.offered_rps:.2f} req/s, {sc.note}, "
                             f"{sc.window_s:,.0f} s of arrivals")  # fmt: skip
        program.loads.append((section, sc))


def add_ramp(program: Program, name: str, levels: str, seed: int, model: str) -> None:
    shaped = ramp(SHAPES[name], levels, seed, model)
    shape = shaped.shape
    notes = [f"fleet {shape.fleet.name}; requests of ~{shape.prompt_tokens} prompt tokens and "
             f"{shape.output_tokens} output tokens (ignore_eos)",
             "levels " + ", ".join(f"{lv.load} ({len(lv.plan)} requests)" for lv in shaped.levels)
             + ", back to back on one target started once"]  # fmt: skip
    section = Section(name, shape.title, notes, kind="ramp")
    program.sections.append(section)
    program.ramps.append((section, shaped))


def add_replicas(program: Program, mix: Mix, sizes: Sizes) -> None:
    cap, m = mix.capacity, REPLICAS_MULTIPLE
    sc = plans.bursty(mix.workload, mix.seed, cap.rps, m, sizes.replicas_s, mix.model)
    sc = dataclasses.replace(sc, name="replicas")
    notes = [f"the bursty workload at {sc.load}: {sc.note}, {len(sc.plan)} requests in "
             f"{sizes.replicas_s:g} s; the same arrivals to one gateway and to two gateway "
             "processes (every other request to each), default policy, one fleet"]  # fmt: skip
    section = Section("replicas", "Gateway replicas (bursty 3x)", notes)
    program.sections.append(section)
    program.replicas.append((section, sc))
