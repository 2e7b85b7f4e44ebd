"""Scenario arrivals at multiples of capacity: rates, shapes and the same plan every time."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from loadtests.loadgen.arrivals import OnOff
from loadtests.loadgen.workload import load_workload
from loadtests.slo import plans
from loadtests.slo.azure import TraceRow
from loadtests.slo.program import Program, add_ramp, ramp_targets, replica_targets, targets_of
from loadtests.slo.report import Section

WORKLOAD = Path(__file__).resolve().parents[3] / "loadtests/workloads/bursty_straggler.yaml"


@pytest.mark.parametrize(
    ("multiple", "capacity"), [(0.5, 2.0), (1.0, 2.63), (3.0, 2.0), (5.0, 1.3)]
)
def test_bursty_bursts_at_the_multiple_of_capacity(multiple: float, capacity: float) -> None:
    wl = load_workload(WORKLOAD)
    sc = plans.bursty(wl, 0, capacity, multiple, 30.0, "served")
    assert isinstance(wl.arrival, OnOff)
    assert sc.offered_rps is not None
    assert wl.arrival.with_rate(sc.offered_rps).rate_on == pytest.approx(multiple * capacity)
    assert (sc.multiple, sc.load, sc.window_s) == (multiple, f"{multiple:g}x", 30.0)
    assert {r.model for r in sc.plan} == {"served"}
    assert all(r.at_s < 30.0 for r in sc.plan)
    assert not sc.honour_retry_after


def test_the_same_plan_for_every_target_and_more_at_higher_loads() -> None:
    wl = load_workload(WORKLOAD)
    a = plans.bursty(wl, 3, 2.0, 2.0, 60.0, "m")
    assert a == plans.bursty(wl, 3, 2.0, 2.0, 60.0, "m")
    assert len(plans.bursty(wl, 3, 2.0, 5.0, 60.0, "m").plan) > len(a.plan)
    long = [r for r in a.plan if r.label == "long"]
    assert long
    assert 0.1 < len(long) / len(a.plan) < 0.35  # 20% of prompts are the 2,000-word ones


@pytest.mark.parametrize("multiple", [1.0, 2.0, 4.0])
def test_steady_is_poisson_at_the_multiple_with_retrying_clients(multiple: float) -> None:
    sc = plans.steady(load_workload(WORKLOAD), 0, 2.5, multiple, 100.0, "m")
    assert sc.offered_rps == pytest.approx(multiple * 2.5)
    assert sc.honour_retry_after
    assert len(sc.plan) / 100.0 == pytest.approx(multiple * 2.5, rel=0.25)


@pytest.mark.parametrize(("burst", "idle", "warmup"), [(300, 60.0, 10.0), (40, 5.0, 0.0)])
def test_cold_burst_is_all_at_once_after_idle(burst: int, idle: float, warmup: float) -> None:
    sc = plans.cold(load_workload(WORKLOAD), 0, 2.0, burst, idle, warmup, "m")
    assert [r.index for r in sc.plan] == list(range(burst))
    assert {r.at_s for r in sc.plan} == {0.0}
    assert sc.idle_s == idle
    assert sc.multiple is None
    assert bool(sc.warmup) == (warmup > 0)
    assert all(r.at_s < warmup for r in sc.warmup)
    prompts = {str(r.messages) for r in sc.plan}
    assert not prompts & {str(r.messages) for r in sc.warmup}


@pytest.mark.parametrize(("multiple", "capacity"), [(1.0, 0.8), (2.0, 0.8), (4.0, 3.0)])
def test_azure_replays_at_the_multiple_of_capacity(multiple: float, capacity: float) -> None:
    rows = [TraceRow(t, 400 + 10 * i, 20) for i, t in enumerate((0.0, 2.0, 2.5, 7.0, 9.0))]
    sc = plans.azure("conv", rows, 0, capacity, multiple, "m", 16384)
    times = [r.at_s for r in sc.plan]
    assert (len(times) - 1) / (times[-1] - times[0]) == pytest.approx(multiple * capacity)
    assert sc.window_s == pytest.approx(times[-1])
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert gaps[0] / gaps[1] == pytest.approx(4.0)  # the trace's own shape: 2.0 s then 0.5 s
    assert sc.name == "azure-conv"
    assert sc.offered_rps == pytest.approx(multiple * capacity)
    assert times[-1] == pytest.approx(4 / (multiple * capacity))  # 4 gaps at the new rate


def _scenario(multiple: float | None) -> plans.Scenario:
    return plans.Scenario("x", "l", multiple, (), 1.0)


@pytest.mark.parametrize(
    ("multiple", "refuser"), [(0.5, False), (1.0, False), (2.0, True), (None, True)]
)
def test_the_refuser_runs_where_refusals_are_expected(
    multiple: float | None, refuser: bool
) -> None:
    targets = ["direct", "gateway", "refuse-all"]
    assert ("refuse-all" in targets_of(_scenario(multiple), targets)) is refuser
    assert targets_of(_scenario(multiple), targets)[:2] == ["direct", "gateway"]


def test_ramp_and_replica_targets() -> None:
    every = ["direct", "gateway", "gateway-overload", "litellm", "vllm-router", "nginx",
             "refuse-all"]  # fmt: skip
    assert ramp_targets(every) == ["direct", "gateway", "litellm", "vllm-router", "nginx"]
    assert replica_targets(every) == ["direct", "gateway", "gateway-x2"]
    assert replica_targets(["gateway"], cluster=True) == ["gateway", "gateway-x2",
                                                          "gateway-x2-cluster"]  # fmt: skip


def test_the_program_runs_the_replicas_row_after_the_loads() -> None:
    program = Program()
    section = Section("bursty", "Bursty")
    program.loads.append((section, _scenario(3.0)))
    add_ramp(program, "ramp8", "4:2,16:3", 0, "m")
    program.replicas.append((Section("replicas", "Replicas"), _scenario(3.0)))
    runs = program.runs(["direct", "gateway", "refuse-all"])
    assert [(s.scenario, names) for s, _, names in runs] == [
        ("bursty", ["direct", "gateway", "refuse-all"]),
        ("replicas", ["direct", "gateway", "gateway-x2"])]  # fmt: skip
    assert [s.kind for s in program.sections] == ["ramp"]
    assert program.ramps[0][1].requests() == 5
    assert program.seconds(["direct", "gateway"], 10.0) > 0
