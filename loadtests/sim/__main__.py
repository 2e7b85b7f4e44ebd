"""Command line: ``python -m loadtests.sim --fleet FILE`` or a one-group shortcut."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import Sequence
from pathlib import Path

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
    args = ap.parse_args(argv)
    if args.fleet:
        config = load_fleet(fleet_path(args.fleet))
        if args.speed is not None:
            config = config.model_copy(update={"speed": args.speed})
        return config
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
    )
    return FleetConfig(speed=args.speed or 1.0, host=args.host, seed=args.seed, groups=[group])


def main(argv: Sequence[str] | None = None) -> None:
    config = parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve_fleet(config))


if __name__ == "__main__":
    main()
