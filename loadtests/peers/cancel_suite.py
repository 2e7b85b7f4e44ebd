"""How fast each target closes its upstream when the client leaves, per phase.

Method (``loadtests.cancellation``'s trials, for any target): the fake upstream runs in this
process (``serve_app``) and logs the moment it notices each cancellation; every target is
started in front of it. Per target and phase, sequential trials open a raw socket, send a
streaming (or whole-answer) request, wait until it is in the phase, close the socket and
time how long until the fake saw the departure (bounded by ``bound_s``, later counts as not
detected). Phases: ``first_token`` (the fake holds the first token ``first_token_s``),
``streaming`` (after the first content event), ``non_streaming`` (while the whole answer is
made). ``queued`` needs an admission queue: only our gateway has one, run on a gateway whose
pool takes one request at a time (``loadtests.cancellation.queued.run_queued``); the peers' rows
say n/a. ``direct`` is the fake noticing a client of its own (the floor).

Parameters: ``trials``, ``bound_s``, ``first_token_s``, ``max_misses`` (``CancelPlan``).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loadtests.cancellation.gateway_process import gateway_process
from loadtests.cancellation.phases import run_phase
from loadtests.cancellation.queued import run_queued
from loadtests.cancellation.raw_client import complete
from loadtests.cancellation.report import phase_row
from loadtests.cancellation.upstreams import FakeTarget
from loadtests.kit.fake_upstream import FakeConfig, FakeLog, build_fake
from loadtests.kit.serving import serve_app
from loadtests.overhead.measure import gateway_policy
from loadtests.peers.configs import Upstream
from loadtests.peers.install import Binaries
from loadtests.peers.targets import (
    LAUNCH_ERRORS,
    Front,
    Launch,
    Setup,
    launched,
    plan_launch,
    port_of,
)

PHASES = ("queued", "first_token", "streaming", "non_streaming")


@dataclass(frozen=True, slots=True)
class CancelPlan:
    trials: int = 30
    bound_s: float = 2.0
    first_token_s: float = 4.0
    max_misses: int = 4
    phases: tuple[str, ...] = PHASES


def _args(plan: CancelPlan) -> argparse.Namespace:
    return argparse.Namespace(trials=plan.trials, bound_s=plan.bound_s,
                              max_misses=plan.max_misses)  # fmt: skip


def _address(launch: Launch) -> tuple[str, int]:
    host, _, port = launch.url.removeprefix("http://").partition(":")
    return host, int(port)


def _queued_row(target: FakeTarget, plan: CancelPlan) -> dict[str, Any]:
    with (
        tempfile.TemporaryDirectory() as tmp,
        gateway_process(target, Path(tmp), queued=True) as gw,
    ):
        for body in target.warm_up_bodies():
            complete(gw, body)
        run, counts = run_queued(gw, target, _args(plan))
    return phase_row(run, counts)


def _target_rows(
    name: str, launch: Launch, target: FakeTarget, plan: CancelPlan
) -> list[dict[str, Any]]:
    address = _address(launch)
    headers = tuple(launch.headers.items())
    for body in target.warm_up_bodies():
        complete(address, body, headers)
    rows = []
    for phase in plan.phases:
        if phase == "queued":
            rows.append(_queued_row(target, plan) if name == "gateway" else {"phase": phase})
        else:
            rows.append(phase_row(run_phase(address, target, phase, _args(plan), headers), {}))
        rows[-1]["target"] = name
        _progress(rows[-1])
    return rows


def run_cancellation(
    targets: Sequence[str],
    plan: CancelPlan,
    root: Path,
    base_port: int,
    binaries: Binaries,
    failures: dict[str, str],
) -> list[dict[str, Any]]:
    """Rows per target and phase (see the module doc); ``n/a`` rows have only the phase."""
    log, config = FakeLog(), FakeConfig()
    rows: list[dict[str, Any]] = []
    with serve_app(build_fake(config, log)) as served:
        target = FakeTarget(served, log, config.model, first_token_s=plan.first_token_s,
                            settle_s=plan.first_token_s + 2)  # fmt: skip
        front = Front((Upstream(served.url, config.model),), "bench", "openai",
                      gateway_policy(served.url))  # fmt: skip
        for name in targets:
            launch = plan_launch(name, front, Setup(), port_of(name, base_port), root / name,
                                 binaries)  # fmt: skip
            if name == "direct":
                launch = Launch("direct", [], served.url, "")
            try:
                with launched(launch, root / name / "process.log"):
                    rows += _target_rows(name, launch, target, plan)
            except LAUNCH_ERRORS as exc:  # the others still run; the report names it
                failures[f"cancel/{name}"] = str(exc)
    return rows


def _progress(row: dict[str, Any]) -> None:
    if "trials" not in row:
        sys.stderr.write(f"[cancel] {row['target']} {row['phase']}: n/a\n")
        return
    sys.stderr.write(
        f"[cancel] {row['target']} {row['phase']}: detected {row['detected']}/{row['trials']}, "
        f"p50 {row['p50_ms']} ms, p99 {row['p99_ms']} ms\n"
    )
