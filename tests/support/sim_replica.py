"""One simulated vLLM replica on a real uvicorn server in this process, its engine readable."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from loadtests.kit.serving import Served, serve_app
from loadtests.sim.clock import RealClock
from loadtests.sim.faults import NO_FAULTS, Faults
from loadtests.sim.profile import load_profile
from loadtests.sim.replica import Replica, build_replica
from loadtests.sim.server import build_app

SERVED = "sim-model"


@dataclass(frozen=True)
class SimReplica:
    replica: Replica
    served: Served

    @property
    def url(self) -> str:
        return self.served.url

    def wait_until(self, predicate: Callable[[], bool], timeout_s: float = 10) -> None:
        """Block until ``predicate`` holds on the replica's loop (checked after each step)."""
        driver = self.replica.driver

        async def until() -> None:
            await asyncio.wait_for(driver.wait_until(predicate), timeout_s)

        self.served.call(until, timeout=timeout_s + 1)


@contextmanager
def sim_replica(
    profile: str = "qwen2.5-1.5b-h100",
    speed: float = 1.0,
    max_num_seqs: int | None = None,
    *,
    name: str = "replica",
    faults: Faults = NO_FAULTS,
) -> Iterator[SimReplica]:
    """The replica of ``profile``, running ``max_num_seqs`` at once (None: the profile's),
    with ``faults``."""
    loaded = load_profile(profile)
    if max_num_seqs is not None:
        loaded = loaded.model_copy(update={"max_num_seqs": max_num_seqs})
    replica = build_replica(
        loaded,
        kind="vllm",
        served_model=SERVED,
        clock=RealClock(speed),
        name=name,
        faults=faults,
    )
    with serve_app(build_app(replica)) as served:
        yield SimReplica(replica, served)
