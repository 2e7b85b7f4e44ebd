"""Running the planned program: every open-loop load through its targets, then every ramp
through its targets, rows appended to their sections and the report saved after each load
(an interrupted run keeps what it measured).

Open-loop loads: ``loadtests.slo.bench.run_target`` per target (a fresh fleet and target per
run), rows by ``loadtests.slo.rows``. Ramps: ``loadtests.slo.ramp_run.run_ramp`` per target
on the ramp's own one-engine fleet (``ramp_bench``: the same ports and peers, the fleet's
default policy, nginx without a cap), rows by ``loadtests.slo.ramp_rows``.

Parameters: ``out`` (records), ``client_timeout_s``, ``retry_cap_s``,
``refusal_pause_cap_s`` (ramps: a refused user's longest pause).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from loadtests.peers.fleets import front_for, rename_model, shift_fleet, write_fleet
from loadtests.peers.load_suite import Bench
from loadtests.peers.targets import LAUNCH_ERRORS
from loadtests.sim.fleet import load_fleet
from loadtests.sim.profile import NaturalStop
from loadtests.slo.bench import SERVED_MODEL, Arena, default_policy, run_target
from loadtests.slo.capacity import engine_tokens
from loadtests.slo.program import Program, ramp_targets
from loadtests.slo.ramp_rows import ramp_rows
from loadtests.slo.ramp_run import run_ramp
from loadtests.slo.ramps import Ramp
from loadtests.slo.rows import row_metrics


@dataclass(frozen=True, slots=True)
class Knobs:
    out: Path
    client_timeout_s: float
    retry_cap_s: float
    refusal_pause_cap_s: float
    fleet_port_offset: int


def slug(text: str) -> str:
    return re.sub(r"[^0-9A-Za-z.]+", "-", text).strip("-")


def _head(sc_name: str, load: str, multiple: float | None, target: str) -> dict[str, Any]:
    return {"scenario": sc_name, "load": load, "multiple": multiple, "target": target,
            "status": None}  # fmt: skip


def run_open(program: Program, targets: Sequence[str], arena: Arena, knobs: Knobs,
             stop: NaturalStop, save: Callable[[], Path]) -> None:  # fmt: skip
    """Every open-loop load through its targets (the replicas row's included)."""
    for number, (section, sc, names) in enumerate(program.runs(targets)):
        tokens = {r.index: engine_tokens(r, stop).prompt_tokens for r in sc.plan}
        for name in names:
            out = knobs.out / f"{number:02d}-{sc.name}-{slug(sc.load)}" / name
            head = _head(sc.name, sc.load, sc.multiple, name)
            try:
                run = run_target(name, sc, arena, out, knobs.client_timeout_s, knobs.retry_cap_s)
            except LAUNCH_ERRORS as exc:
                section.rows.append({**head, "status": f"did not start: {exc}"})
                sys.stderr.write(f"[{sc.name} {sc.load}] {name} did not start: {exc}\n")
                continue
            row = row_metrics(run.outcome.records, tokens, multiple=sc.multiple,
                              window_s=sc.window_s,
                              retries=run.outcome.retries if sc.honour_retry_after else None,
                              metrics_text=run.metrics_text)  # fmt: skip
            section.rows.append({**head, **row})
            sys.stderr.write(
                f"[{sc.name} {sc.load}] {name}: goodput {row['goodput']:.1%}, shed "
                f"{row['shed']:.1%}, p99 {row['ttft_p99_ms'] or 0:,.0f} ms, timeouts "
                f"{row['timeouts']}, errors {row['errors']}\n"
            )
        save()


def ramp_bench(ramp: Ramp, arena: Arena, knobs: Knobs) -> Bench:
    """The ramp's one-engine fleet behind the same ports and peers; nginx uncapped."""
    fleet = shift_fleet(load_fleet(ramp.shape.fleet), knobs.fleet_port_offset)
    fleet, _ = rename_model(fleet, default_policy(fleet), SERVED_MODEL)
    policy = default_policy(fleet)
    path = write_fleet(fleet, knobs.out / f"fleet-{ramp.shape.name}.yaml")
    setup = replace(arena.bench.setup, nginx_limit=None)
    return replace(arena.bench, fleet=fleet, fleet_path=path, front=front_for(fleet, policy),
                   setup=setup)  # fmt: skip


def run_ramps(program: Program, targets: Sequence[str], arena: Arena, knobs: Knobs,
              save: Callable[[], Path]) -> None:  # fmt: skip
    """Every ramp through direct, the gateway and the peers asked for."""
    for section, ramp in program.ramps:
        bench = ramp_bench(ramp, arena, knobs)
        name = ramp.shape.name
        for target in ramp_targets(targets):
            out = knobs.out / f"ramp-{name}" / target
            try:
                run = run_ramp(target, ramp, bench, out, knobs.client_timeout_s,
                               knobs.refusal_pause_cap_s)  # fmt: skip
            except LAUNCH_ERRORS as exc:
                status = {"status": f"did not start: {exc}"}
                section.rows += [{**_head(name, lv.load, None, target), **status}
                                 for lv in ramp.levels]  # fmt: skip
                sys.stderr.write(f"[{name}] {target} did not start: {exc}\n")
                continue
            rows = ramp_rows(name, target, run)
            section.rows += [{**r, "multiple": None} for r in rows]
            for r in rows:
                sys.stderr.write(
                    f"[{name} {r['load']}] {target}: served {r['served']}/{r['sent']}, refused "
                    f"{r['refused']}, TTFT p50/p99 {r['ttft_p50_ms'] or 0:,.0f}/"
                    f"{r['ttft_p99_ms'] or 0:,.0f} ms, engine waiting at {r['waiting_at']}, "
                    f"first refusal at {r['refusal_at']}\n"
                )
            save()
