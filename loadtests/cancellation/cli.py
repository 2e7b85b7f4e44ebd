"""``python -m loadtests.cancellation``: every phase on each upstream, then the table.

Per upstream (``fake``, ``sim``): the queued phase on a gateway whose pool takes one request
at a time, the other phases on one with room, each after a warm-up of complete requests;
then the rows, the notes and (``--json FILE``) the results. Parameters: ``--trials``,
``--bound-s``, ``--upstreams``, ``--phases``, ``--sim-speed``, ``--sim-prompt-tokens``,
``--max-misses`` (see the package's docstring).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from loadtests.cancellation.gateway_process import cancellation_counts, gateway_process
from loadtests.cancellation.phases import run_phase
from loadtests.cancellation.queued import run_queued
from loadtests.cancellation.raw_client import complete
from loadtests.cancellation.report import Counts, gateway_of, notes, phase_row, table
from loadtests.cancellation.sim_target import RequestCounter, SimTarget
from loadtests.cancellation.trial import PHASES, TARGET_S, PhaseRun
from loadtests.cancellation.upstreams import FakeTarget, Target
from loadtests.kit.fake_upstream import FakeConfig, FakeLog, build_fake
from loadtests.kit.serving import serve_app
from loadtests.sim.clock import RealClock
from loadtests.sim.profile import load_profile
from loadtests.sim.replica import build_replica
from loadtests.sim.server import build_app

UPSTREAMS = ("fake", "sim")
SIM_PROFILE = "qwen2.5-1.5b-h100"


@contextmanager
def upstream_for(name: str, args: argparse.Namespace) -> Iterator[Target]:
    if name == "fake":
        log = FakeLog()
        config = FakeConfig()
        with serve_app(build_fake(config, log)) as served:
            yield FakeTarget(served, log, config.model)
        return
    profile = load_profile(SIM_PROFILE)
    replica = build_replica(
        profile, kind="vllm", served_model=profile.model, clock=RealClock(args.sim_speed)
    )
    app = RequestCounter(build_app(replica))
    with serve_app(app) as served:
        yield SimTarget(served, replica, args.sim_prompt_tokens, args.sim_speed, app)


def _progress(run: PhaseRun) -> None:
    sys.stderr.write(
        f"[{run.upstream}] {run.phase}: {len(run.trials)} trials in {run.seconds:.1f} s\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m loadtests.cancellation", description=__doc__)
    parser.add_argument("--trials", type=int, default=500, help="per phase and upstream")
    parser.add_argument("--bound-s", type=float, default=2.0, help="wait for the upstream")
    parser.add_argument("--upstreams", default=",".join(UPSTREAMS))
    parser.add_argument("--phases", default=",".join(PHASES))
    parser.add_argument("--sim-speed", type=float, default=2.0)
    parser.add_argument("--sim-prompt-tokens", type=int, default=24000)
    parser.add_argument("--max-misses", type=int, default=10)
    parser.add_argument("--json", help="also write the results to this JSON file")
    args = parser.parse_args(argv)
    upstreams = [u for u in args.upstreams.split(",") if u]
    phases = [p for p in args.phases.split(",") if p]
    if bad := [u for u in upstreams if u not in UPSTREAMS] + [p for p in phases if p not in PHASES]:
        parser.error(f"unknown upstream or phase: {', '.join(bad)}")

    rows: list[dict[str, Any]] = []
    counts: Counts = {}
    began = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        for name in upstreams:
            counts[name] = {}
            with upstream_for(name, args) as target:
                runs: list[PhaseRun] = []
                if "queued" in phases:
                    with gateway_process(target, Path(tmp), queued=True) as gateway:
                        for body in target.warm_up_bodies():
                            complete(gateway, body)
                        run, counts[name]["queued"] = run_queued(gateway, target, args)
                    _progress(run)
                    runs.append(run)
                others = [p for p in phases if p != "queued"]
                if others:
                    with gateway_process(target, Path(tmp)) as gateway:
                        for body in target.warm_up_bodies():
                            complete(gateway, body)
                        for phase in others:
                            runs.append(run_phase(gateway, target, phase, args))
                            _progress(runs[-1])
                        counts[name]["main"] = cancellation_counts(gateway)
                rows.extend(phase_row(run, counts[name][gateway_of(run.phase)]) for run in runs)

    title = (
        f"Cancellation propagation through the gateway: client socket closed -> upstream sees "
        f"the departure (queued: the gateway's queue drops the request) ({args.trials} "
        f"sequential trials per row, bound {args.bound_s:g} s, target 100% under "
        f"{TARGET_S * 1000:.0f} ms)"
    )
    found = notes(rows, counts, args)
    print(title)
    print()
    print(table(rows))
    print()
    for note in found:
        print(f"- {note}")
    print(f"\ntotal {time.monotonic() - began:.0f} s")
    if args.json:
        parameters = {k: v for k, v in vars(args).items() if k != "json"}
        result = {
            "parameters": parameters,
            "rows": rows,
            "gateway_cancellations": counts,
            "notes": found,
        }
        Path(args.json).write_text(json.dumps(result, indent=2))
    return 0
