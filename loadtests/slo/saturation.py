"""A check of the computed capacity on the fleet itself, before the scenarios.

Method: direct round-robin, the straggler mix on Poisson arrivals at twice the computed
capacity for ``seconds`` (the engines' queues never empty after the first seconds); the fleet's
throughput is the requests completed per second between a third of the way in and the last
arrival (``completed_rps``), when every slot is busy; clients wait as long as the run lasts
(a client leaving mid-stream would waste slot time), so the backlog drains after the last
arrival. The report shows the figure beside the computed one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from loadtests.loadgen.record import RequestRecord
from loadtests.slo import plans
from loadtests.slo.bench import Arena, run_target
from loadtests.slo.program import Mix

OVERLOAD = 2.0


def completed_rps(records: Sequence[RequestRecord], start_s: float, end_s: float) -> float:
    """Served requests whose stream ended in ``[start_s, end_s)``, per second."""
    if end_s <= start_s:
        raise ValueError("an empty window")
    done = sum(1 for r in records if r.ok and start_s <= r.end_s < end_s)
    return done / (end_s - start_s)


def check_capacity(arena: Arena, mix: Mix, seconds: float, out: Path) -> str:
    """The measured throughput against the computed capacity, as the report's line."""
    sc = plans.steady(mix.workload, mix.seed, mix.capacity.rps, OVERLOAD, seconds, mix.model)
    sc = dataclasses.replace(sc, honour_retry_after=False)
    run = run_target("direct", sc, arena, out, 4 * seconds, 0.0)
    measured = completed_rps(run.outcome.records, seconds / 3, seconds)
    return (f"computed {mix.capacity.rps:.2f} req/s; measured {measured:.2f} req/s (direct, "
            f"Poisson at {OVERLOAD:g}x for {seconds:g} s, completions from {seconds / 3:g} s "
            f"on: {measured / mix.capacity.rps:.0%} of computed)")  # fmt: skip
