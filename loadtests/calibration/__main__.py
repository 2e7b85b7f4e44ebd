"""Calibrate the simulator against real vLLM (CPU build) on the same workload.

``python -m loadtests.calibration real --out FILE.json`` starts the real vLLM server (set up
from the cache, see ``loadtests/real``; ``--url`` measures one already running) and measures
the workload (``workload.py``);
``... fit --real FILE.json`` prints the step-time coefficients fitted to it (``fit.py``);
``... sim --profile NAME --real FILE.json --out SIM.json --table TABLE.md`` starts the
simulator with that profile (real time, vLLM personality), measures the same workload and
writes the comparison table (``table.py``). ``--rounds`` requests per worker and cell,
``--passes`` times over the whole workload.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from loadtests.calibration.fit import fit_step_time
from loadtests.calibration.table import markdown
from loadtests.calibration.workload import Plan, measure
from loadtests.loadgen.processes import running
from loadtests.real.cache import cache_root
from loadtests.real.launch import free_port
from loadtests.real.model import SERVED_NAME
from loadtests.real.vllm_cpu import VllmOptions, vllm_server


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    plan = Plan(rounds=args.rounds, passes=args.passes)
    if args.command == "real" and args.url:
        _write(args.out, asyncio.run(measure(args.url, SERVED_NAME, plan)))
    elif args.command == "real":
        options = VllmOptions(port=free_port(), served_name=SERVED_NAME)
        with vllm_server(cache_root(), options) as url:
            _write(args.out, asyncio.run(measure(url, SERVED_NAME, plan)))
    elif args.command == "fit":
        print(json.dumps(fit_step_time(_read(args.real)), indent=2))
    else:
        port = free_port()
        argv_sim = [sys.executable, "-m", "loadtests.sim", "--profile", args.profile]
        argv_sim += ["--served-model", SERVED_NAME, "--port", str(port), "--speed", "1"]
        url = f"http://127.0.0.1:{port}"
        log = cache_root() / "logs" / f"sim-{port}.log"
        with running(argv_sim, [url + "/health"], log):
            found = asyncio.run(measure(url, SERVED_NAME, plan))
        _write(args.out, found)
        table = markdown(_read(args.real), found)
        Path(args.table).write_text(_header(args.profile, args.real) + table)
        print(table)


def _header(profile: str, real: str) -> str:
    return (
        f"# Simulator profile `{profile}` against the real server\n\n"
        f"Real: `{real}` (`python -m loadtests.calibration real`). Simulator: the same\n"
        f"workload (`loadtests/calibration/workload.py`) against `python -m loadtests.sim\n"
        f"--profile {profile} --speed 1` (`python -m loadtests.calibration sim`). Medians\n"
        "per cell; error = (sim - real) / real.\n\n"
    )


def _read(path: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = json.loads(Path(path).read_text())
    return found


def _write(path: str, cells: list[dict[str, Any]]) -> None:
    Path(path).write_text(json.dumps(cells, indent=1) + "\n")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m loadtests.calibration", description=__doc__)
    parser.add_argument("command", choices=["real", "fit", "sim"])
    parser.add_argument("--out", default="calibration.json")
    parser.add_argument("--real", default="loadtests/calibration/vllm-cpu-gemma-3-270m.json")
    parser.add_argument("--profile", default="gemma-3-270m-vllm-cpu")
    parser.add_argument("--table", default="loadtests/calibration/gemma-3-270m-vllm-cpu.md")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--url", help="real: measure this running server instead")
    return parser


if __name__ == "__main__":
    main()
