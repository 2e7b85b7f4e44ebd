"""The simulator's faults as decisions: which requests stall or die, on which replicas, from
which flags and fleet files (no server, no timing)."""

from __future__ import annotations

import math

import pydantic
import pytest

from loadtests.sim.__main__ import parse_args
from loadtests.sim.clock import RealClock
from loadtests.sim.faults import Death, Fate, FaultInjector, Faults, Stall, draw, fate
from loadtests.sim.fleet import FleetConfig, build_replicas

KEYS = [f"prompt {i}" for i in range(4000)]


@pytest.mark.parametrize(
    ("faults", "expected"),
    [
        (Faults(), Fate()),
        (Faults(stall=Stall(rate=1.0, seconds=2.5)), Fate(stall_s=2.5)),
        (Faults(stall=Stall(rate=1.0, seconds="never")), Fate(stall_s=math.inf)),
        (Faults(stall=Stall(rate=0.0, seconds=2.5)), Fate()),
        (Faults(death=Death(rate=1.0, after_tokens=10)), Fate(die_after=10)),
        (
            Faults(death=Death(rate=1.0, after_tokens=0, mode="hang")),
            Fate(die_after=0, death_mode="hang"),
        ),
        (Faults(death=Death(rate=0.0, after_tokens=3, mode="exit")), Fate(death_mode="exit")),
        (
            Faults(stall=Stall(rate=1.0, seconds=1.0), death=Death(rate=1.0, after_tokens=5)),
            Fate(stall_s=1.0, die_after=5),
        ),
    ],
)
def test_fate_at_rate_zero_and_one(faults: Faults, expected: Fate) -> None:
    assert fate(faults, "r-0", "any prompt") == expected


@pytest.mark.parametrize(("rate", "low", "high"), [(0.04, 0.03, 0.05), (0.2, 0.18, 0.22)])
def test_share_hit_is_the_rate(rate: float, low: float, high: float) -> None:
    faults = Faults(stall=Stall(rate=rate), death=Death(rate=rate))
    fates = [fate(faults, "r-0", k) for k in KEYS]
    assert low < sum(f.stall_s > 0 for f in fates) / len(KEYS) < high
    assert low < sum(f.die_after is not None for f in fates) / len(KEYS) < high


def test_a_requests_fate_is_fixed_and_replicas_draw_apart() -> None:
    assert draw(0, "r-0", "stall", "k") == draw(0, "r-0", "stall", "k")
    assert all(0 <= draw(0, "r-0", "stall", k) < 1 for k in KEYS[:100])
    faults = Faults(stall=Stall(rate=0.2))
    on_a = {k for k in KEYS if fate(faults, "r-0", k).stall_s}
    on_b = {k for k in KEYS if fate(faults, "r-1", k).stall_s}
    reseeded = {k for k in KEYS if fate(faults.model_copy(update={"seed": 1}), "r-0", k).stall_s}
    # Independent draws: the overlap is about 0.2 x 0.2 of the keys, not 0.2.
    assert len(on_a & on_b) < 0.06 * len(KEYS)
    assert len(on_a & reseeded) < 0.06 * len(KEYS)
    # The two kinds are drawn apart too.
    both = Faults(stall=Stall(rate=0.2), death=Death(rate=0.2))
    dying = {k for k in KEYS if fate(both, "r-0", k).die_after is not None}
    assert len(on_a & dying) < 0.06 * len(KEYS)


def test_injector_counts_what_it_decides() -> None:
    injector = FaultInjector(Faults(stall=Stall(rate=1.0)), "r-0")
    injector.admit("a", 0, continued=False)
    injector.admit("b", 0, continued=True)
    injector.died("cut")
    counts = injector.counts
    assert (counts.requests, counts.stalls, counts.continuations) == (2, 2, 1)
    assert counts.deaths == {"cut": 1, "hang": 0, "exit": 0}


@pytest.mark.parametrize(
    "bad",
    [{"stall": {"rate": 1.5}}, {"stall": {"seconds": "later"}}, {"death": {"mode": "explode"}},
     {"death": {"after_tokens": -1}}, {"typo": 1}],
)  # fmt: skip
def test_strict_schema(bad: dict[str, object]) -> None:
    with pytest.raises(pydantic.ValidationError):
        Faults.model_validate(bad)


def test_fleet_faults_go_to_the_replicas_they_name() -> None:
    config = FleetConfig.model_validate(
        {"groups": [{"name": "g", "profile": "qwen2.5-1.5b-h100", "served_model": "m",
                     "replicas": 3, "base_port": 0,
                     "faults": {"death": {"rate": 0.2}, "replicas": [1]}}]}
    )  # fmt: skip
    replicas = [r for r, _ in build_replicas(config, RealClock())]
    assert [r.faults.faults.death.rate for r in replicas] == [0.0, 0.2, 0.0]
    assert [r.faults.replica for r in replicas] == ["g-0", "g-1", "g-2"]


@pytest.mark.parametrize(
    ("flags", "stall", "death"),
    [
        ([], Stall(), Death()),
        (["--stall-rate", "0.04", "--stall-s", "2.5"], Stall(rate=0.04, seconds=2.5), Death()),
        (["--stall-rate", "1", "--stall-s", "never"], Stall(rate=1.0, seconds="never"), Death()),
        (
            ["--death-rate", "0.2", "--death-after", "10", "--death-mode", "hang"],
            Stall(),
            Death(rate=0.2, after_tokens=10, mode="hang"),
        ),
    ],
)
def test_cli_fault_flags(flags: list[str], stall: Stall, death: Death) -> None:
    config = parse_args(["--profile", "qwen2.5-1.5b-h100", *flags])
    (group,) = config.groups
    assert (group.faults.stall, group.faults.death) == (stall, death)


def test_cli_fault_flags_override_a_fleet_files_faults() -> None:
    config = parse_args(["--fleet", "demo", "--death-rate", "0.5", "--fault-seed", "7"])
    assert {g.faults.death.rate for g in config.groups} == {0.5}
    assert {g.faults.seed for g in config.groups} == {7}
    assert {g.faults.stall.rate for g in config.groups} == {0.0}


def test_the_shipped_faulty_fleet() -> None:
    (group,) = parse_args(["--fleet", "faults"]).groups
    assert (group.replicas, group.faults.stall, group.faults.death) == (
        3, Stall(rate=0.04, seconds=2.5), Death(rate=0.2, after_tokens=10, mode="cut"))  # fmt: skip
