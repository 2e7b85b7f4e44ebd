"""A fleet of simulated replicas served from one process and one event loop.

Each replica has its own engine, driver task, metrics registry and uvicorn server on its own
port; all share one simulated clock running ``speed`` times real time. A group may set the
engine's serving flags over its profile's defaults (``max_num_seqs``, ``max_model_len``, as
``vllm serve --max-num-seqs/--max-model-len`` would): the hardware's step times stay the
profile's (``group_profile``). A group may inject faults (``faults:``, ``faults.py``): stalls
before the first token and deaths mid-stream, in all its replicas or some of them.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

import yaml
from pydantic import BaseModel, ConfigDict, Field

from loadtests.sim.clock import Clock, RealClock
from loadtests.sim.faults import NO_FAULTS, Faults
from loadtests.sim.profile import Profile, load_profile
from loadtests.sim.replica import EngineKind, Replica, build_replica
from loadtests.sim.server import ReplicaServer, bind, make_server, wait_started


class GroupConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    profile: str
    engine: EngineKind = "vllm"
    served_model: str
    replicas: int = Field(default=1, ge=1)
    base_port: int = Field(ge=0, le=65535)
    # Serving flags over the profile's defaults (None: the profile's).
    max_num_seqs: int | None = Field(default=None, ge=1)
    max_model_len: int | None = Field(default=None, ge=2)
    # Faults the group's replicas inject (loadtests/sim/faults.py); none by default.
    faults: Faults = NO_FAULTS


class FleetConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    speed: float = Field(default=1.0, gt=0)
    host: str = "127.0.0.1"
    seed: int = 0
    groups: list[GroupConfig]


def load_fleet(path: str | Path) -> FleetConfig:
    with Path(path).open(encoding="utf-8") as fh:
        return FleetConfig.model_validate(yaml.safe_load(fh))


def group_profile(group: GroupConfig) -> Profile:
    """The group's profile with its serving flags applied."""
    profile = load_profile(group.profile)
    flags = {
        k: v
        for k, v in (("max_num_seqs", group.max_num_seqs), ("max_model_len", group.max_model_len))
        if v is not None
    }
    return Profile.model_validate({**profile.model_dump(), **flags}) if flags else profile


def build_replicas(config: FleetConfig, clock: Clock) -> Iterator[tuple[Replica, int]]:
    """Every replica of the fleet with its port (``base_port + i``; 0 stays 0 = any)."""
    for group in config.groups:
        profile = group_profile(group)
        for i in range(group.replicas):
            replica = build_replica(
                profile,
                kind=group.engine,
                served_model=group.served_model,
                clock=clock,
                name=f"{group.name}-{i}",
                seed=config.seed + i,
                faults=group.faults if group.faults.applies_to(i) else NO_FAULTS,
            )
            yield replica, group.base_port + i if group.base_port else 0


async def serve_fleet(
    config: FleetConfig,
    *,
    started: asyncio.Event | None = None,
    out: TextIO | None = None,
) -> None:
    """Serve every replica until cancelled; ``started`` is set once all of them listen."""
    clock = RealClock(config.speed)
    servers: list[ReplicaServer] = []
    tasks: list[asyncio.Task[None]] = []
    stream = out if out is not None else sys.stdout
    try:
        for replica, port in build_replicas(config, clock):
            sock = bind(config.host, port)
            server = make_server(replica)
            servers.append(server)
            tasks.append(asyncio.create_task(server.serve(sockets=[sock])))
            bound = sock.getsockname()[1]
            url = f"http://{config.host}:{bound}"
            print(f"sim {replica.name} {replica.kind} {replica.served_model} {url}", file=stream)
        stream.flush()
        await wait_started(servers, tasks)
        if started is not None:
            started.set()
        await asyncio.gather(*tasks)
    finally:
        for server in servers:
            server.should_exit = True
        if tasks:
            await asyncio.wait(tasks)
