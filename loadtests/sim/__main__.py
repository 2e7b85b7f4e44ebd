"""Command line: ``python -m loadtests.sim --fleet FILE`` or a one-group shortcut.

Fault flags (``--stall-rate``, ``--stall-s``, ``--death-rate``, ``--death-after``,
``--death-mode``, ``--fault-seed``) set the faults of the shortcut's group, or of every group
of ``--fleet`` (over the file's own ``faults:``); see ``loadtests/sim/faults.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import Sequence
from pathlib import Path

from loadtests.sim.faults import Death, Faults, Stall
from loadtests.sim.fleet import FleetConfig, GroupConfig, load_fleet, serve_fleet
from loadtests.sim.profile import load_profile


def fleet_path(name_or_path: str) -> Path:
    """A path as given, or a fleet shipped with the simulator by name (``demo``)."""
    path = Path(name_or_path)
    if path.exists() or path.suffix:
        return path
    return Path(__file__).resolve().parent / "fleets" / f"{name_or_path}.yaml"


def parse_args(argv: Sequence[str] | None = None) -> FleetConfig:
    ap = argparse.ArgumentParser(prog="python -m loadtests.sim", description=__doc__)
    ap.add_argument("--fleet", help="fleet YAML file, or the name of one in loadtests/sim/fleets")
    ap.add_argument("--profile", help="profile stem in loadtests/sim/profiles or a path")
    ap.add_argument("--engine", choices=["vllm", "tgi"], default="vllm")
    ap.add_argument("--served-model", help="model name to serve (default: the profile's)")
    ap.add_argument("--replicas", type=int, default=1)
    ap.add_argument("--port", type=int, default=8000, help="port of replica 0")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--speed", type=float, default=None, help="simulated/real time ratio")
    ap.add_argument("--seed", type=int, default=0)
    faults = ap.add_argument_group("faults (none by default; loadtests/sim/faults.py)")
    faults.add_argument("--stall-rate", type=float, help="share of requests stalled")
    faults.add_argument("--stall-s", type=stall_seconds,
                        help="wall seconds of a stall before the 1st token, or never")  # fmt: skip
    faults.add_argument("--death-rate", type=float, help="share of streams that die")
    faults.add_argument("--death-after", type=int, help="tokens sent before a stream dies")
    faults.add_argument("--death-mode", choices=["cut", "hang", "exit"])
    faults.add_argument("--fault-seed", type=int)
    args = ap.parse_args(argv)
    if args.fleet:
        config = load_fleet(fleet_path(args.fleet))
        if args.speed is not None:
            config = config.model_copy(update={"speed": args.speed})
        groups = [g.model_copy(update={"faults": fault_flags(args, g.faults)})
                  for g in config.groups]  # fmt: skip
        return config.model_copy(update={"groups": groups})
    if not args.profile:
        ap.error("give --fleet FILE or --profile NAME")
    served = args.served_model or load_profile(args.profile).model
    group = GroupConfig(
        name=args.profile,
        profile=args.profile,
        engine=args.engine,
        served_model=served,
        replicas=args.replicas,
        base_port=args.port,
        faults=fault_flags(args, Faults()),
    )
    return FleetConfig(speed=args.speed or 1.0, host=args.host, seed=args.seed, groups=[group])


def stall_seconds(text: str) -> float | str:
    return "never" if text == "never" else float(text)


def fault_flags(args: argparse.Namespace, faults: Faults) -> Faults:
    """``faults`` with the fault flags given on the command line applied."""
    stall = {
        k: v for k, v in (("rate", args.stall_rate), ("seconds", args.stall_s)) if v is not None
    }
    death = {
        k: v
        for k, v in (
            ("rate", args.death_rate),
            ("after_tokens", args.death_after),
            ("mode", args.death_mode),
        )
        if v is not None
    }
    seed = {} if args.fault_seed is None else {"seed": args.fault_seed}
    return Faults.model_validate(
        {
            **faults.model_dump(),
            "stall": Stall.model_validate({**faults.stall.model_dump(), **stall}),
            "death": Death.model_validate({**faults.death.model_dump(), **death}),
            **seed,
        }
    )


def main(argv: Sequence[str] | None = None) -> None:
    config = parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve_fleet(config))


if __name__ == "__main__":
    main()
