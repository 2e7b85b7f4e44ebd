"""Calibrate the simulator against real vLLM (CPU build) on the same workload.

``python -m loadtests.calibration real --runs N --out FILE.json`` starts the real vLLM server
``N`` times (set up from the cache, see ``loadtests/real``; a fresh server per run; ``--url``
measures one already running instead) and measures the workload (``workload.py``) on each,
``--rounds`` requests per worker and cell, ``--passes`` times over the list of cells; the file
keeps the plan and every run.
``... fit --real FILE.json --profile NAME`` fits the profile's cost coefficients to the runs'
pooled medians by replaying the workload on the engine in virtual time (``fit.py``,
``replay.py``) and prints them as YAML with the replay's comparison table.
``... sim --real FILE.json --profile NAME --out SIM.json --table TABLE.md`` starts the
simulator with that profile (real time, vLLM personality), measures the same plan and writes
the comparison table (``table.py``). Files default to ``results/`` here: the figures of record
(the real runs, the table), and a new run's file under ``results/out/`` (git-ignored).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

import yaml

from gateway.children import running
from loadtests.calibration.fit import fit_profile
from loadtests.calibration.replay import replay
from loadtests.calibration.table import markdown, run_spread
from loadtests.calibration.workload import Plan, measure, pooled
from loadtests.kit.ports import free_port
from loadtests.real.cache import cache_root
from loadtests.real.model import SERVED_NAME
from loadtests.real.vllm_cpu import VllmOptions, vllm_server
from loadtests.sim.profile import load_profile

RESULTS = Path(__file__).resolve().parent / "results"
Cells = list[dict[str, Any]]


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    if args.command == "real":
        plan = Plan(rounds=args.rounds, passes=args.passes)
        runs = [_measure_real(args.url, plan) for _ in range(args.runs)]
        _write(args.out, {"plan": asdict(plan), "runs": runs})
    elif args.command == "fit":
        _fit(args.real, args.profile)
    else:
        _sim(args.real, args.profile, args.out, args.table)


def _measure_real(url: str | None, plan: Plan) -> Cells:
    if url:
        return asyncio.run(measure(url, SERVED_NAME, plan))
    options = VllmOptions(port=free_port(), served_name=SERVED_NAME)
    with vllm_server(cache_root(), options) as started:
        return asyncio.run(measure(started, SERVED_NAME, plan))


def _fit(real_path: str, profile_name: str) -> None:
    plan, runs = _read_real(real_path)
    real = pooled(runs)
    fitted = fit_profile(real, load_profile(profile_name), plan)
    fields = {"step_time": fitted.step_time.model_dump(), "frontend_s": fitted.frontend_s}
    print(yaml.safe_dump(fields, sort_keys=False))
    tokens = {c["name"]: int(c["prompt_tokens"]) for c in real}
    print(markdown(real, replay(fitted, plan, tokens)))


def _sim(real_path: str, profile: str, out: str, table_path: str) -> None:
    plan, runs = _read_real(real_path)
    port = free_port()
    argv = [sys.executable, "-m", "loadtests.sim", "--profile", profile]
    argv += ["--served-model", SERVED_NAME, "--port", str(port), "--speed", "1"]
    url = f"http://127.0.0.1:{port}"
    with running(argv, [url + "/health"], cache_root() / "logs" / f"sim-{port}.log"):
        found = asyncio.run(measure(url, SERVED_NAME, plan))
    _write(out, found)
    table = markdown(pooled(runs), found) + run_spread(runs)
    Path(table_path).write_text(_header(profile, real_path, plan, len(runs)) + table)
    print(table)


def _header(profile: str, real: str, plan: Plan, runs: int) -> str:
    return (
        f"# Simulator profile `{profile}` against the real server\n\n"
        f"Real: `{real}`\n"
        f"(`python -m loadtests.calibration real --runs {runs}`): {runs} runs of {plan.passes}"
        f" passes, {plan.rounds} requests per\n"
        "worker and cell, samples pooled. Simulator: the same workload (`workload.py`) against\n"
        f"`python -m loadtests.sim --profile {profile} --speed 1`\n"
        "(`python -m loadtests.calibration sim`). Medians per cell;"
        " error = (sim - real) / real.\n\n"
    )


def _read_real(path: str) -> tuple[Plan, list[Cells]]:
    found = json.loads(Path(path).read_text())
    return Plan.from_dict(found["plan"]), found["runs"]


def _write(path: str, found: object) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(found, indent=1) + "\n")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m loadtests.calibration", description=__doc__)
    parser.add_argument("command", choices=["real", "fit", "sim"])
    parser.add_argument("--out", default=str(RESULTS / "out" / "calibration.json"))
    parser.add_argument("--real", default=str(RESULTS / "vllm-cpu-gemma-3-270m.json"))
    parser.add_argument("--profile", default="gemma-3-270m-vllm-cpu")
    parser.add_argument("--table", default=str(RESULTS / "gemma-3-270m-vllm-cpu.md"))
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--runs", type=int, default=1, help="real: fresh servers, pooled")
    parser.add_argument("--url", help="real: measure this running server instead")
    return parser
