"""One simulated replica: profile, engine, driver, metrics registry, served model name and the
faults it injects (``faults.py``; none by default)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from prometheus_client import CollectorRegistry

from loadtests.sim.clock import Clock
from loadtests.sim.driver import EngineDriver, Observer
from loadtests.sim.engine import Engine
from loadtests.sim.faults import NO_FAULTS, FaultCollector, FaultInjector, Faults
from loadtests.sim.metrics import TgiMetrics, VllmMetrics
from loadtests.sim.profile import Profile

EngineKind = Literal["vllm", "tgi"]


@dataclass(frozen=True)
class Replica:
    name: str
    kind: EngineKind
    served_model: str
    profile: Profile
    engine: Engine
    driver: EngineDriver
    registry: CollectorRegistry
    faults: FaultInjector


def build_replica(
    profile: Profile,
    *,
    kind: EngineKind,
    served_model: str,
    clock: Clock,
    name: str = "replica",
    seed: int = 0,
    faults: Faults = NO_FAULTS,
) -> Replica:
    engine = Engine(profile, seed=seed)
    registry = CollectorRegistry()
    observer: Observer
    if kind == "vllm":
        observer = VllmMetrics(registry, engine, served_model)
    else:
        observer = TgiMetrics(registry, engine)
    driver = EngineDriver(engine, clock, observer=observer)
    injector = FaultInjector(faults, name)
    registry.register(FaultCollector(injector.counts))
    return Replica(name, kind, served_model, profile, engine, driver, registry, injector)
