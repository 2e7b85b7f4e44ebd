"""The benchmark's gateway policies and scenarios (no process started)."""

from __future__ import annotations

import yaml

from loadtests.sim.faults import Faults
from loadtests.tail_faults.scenarios import QUICK, build, tail_fleet
from loadtests.tail_faults.targets import (
    RECOVERY_OFF,
    peer_and_bench,
    policies,
    policy_problem,
    recovery_off_policy,
)


def test_recovery_off_goes_into_every_pool_and_keeps_its_settings() -> None:
    policy = {"backends": [{"name": "a", "pool": "p"}, {"name": "b", "pool": "q"}],
              "pools": {"p": {"max_context": 10}}}  # fmt: skip
    off = recovery_off_policy(policy)
    assert off["pools"] == {"p": {"max_context": 10, **RECOVERY_OFF}, "q": RECOVERY_OFF}
    assert policy["pools"] == {"p": {"max_context": 10}}  # the input is left alone


def test_policies_for_a_fleet() -> None:
    texts = policies(tail_fleet(Faults(), 19761))
    on, off = yaml.safe_load(texts["gateway"]), yaml.safe_load(texts["gateway-off"])
    ports = (19761, 19762, 19763)
    assert [b["url"] for b in on["backends"]] == [f"http://127.0.0.1:{p}" for p in ports]
    assert "pools" not in on  # the default policy: backends and models only
    assert off["pools"] == {"tail": RECOVERY_OFF}
    assert policy_problem(texts["gateway"]) is None


def test_policy_problem_says_what_the_gateway_refuses() -> None:
    problem = policy_problem("backends: []\nnot_a_section: 1\n")
    assert problem is not None
    assert "not_a_section" in problem
    assert "\n" not in problem


def test_gateway_targets_run_the_gateway_with_their_policy() -> None:
    from loadtests.peers.load_suite import Bench
    from loadtests.peers.targets import Front

    front = Front((), "m", "hosted_vllm", "default")
    bench = Bench(tail_fleet(Faults(), 0), None, front, None, None, 0, None)  # type: ignore[arg-type]
    peer, moved = peer_and_bench("gateway-off", bench, {"gateway-off": "off text"})
    assert (peer, moved.front.gateway_policy) == ("gateway", "off text")
    assert peer_and_bench("nginx", bench, {"gateway-off": "x"}) == ("nginx", bench)


def test_scenarios_share_arrivals_and_differ_in_faults() -> None:
    found = {s.name: s for s in build(["stalls", "deaths"], QUICK, 0, 19761, 10120)}
    assert list(found) == ["nofault", "stalls", "deaths"]  # stalls bring their baseline
    assert found["nofault"].plan == found["stalls"].plan
    assert found["stalls"].baseline == "nofault"
    assert found["stalls"].fleet.groups[0].faults.stall.rate == QUICK.stall_rate
    assert found["nofault"].fleet.groups[0].faults == Faults()
    assert len(found["deaths"].plan) == QUICK.deaths_requests
    assert found["deaths"].fleet.groups[0].faults.death.after_tokens == QUICK.death_after
    assert {r.model for r in found["deaths"].plan} == {"sim-tail-engine"}
    again = {s.name: s for s in build(["stalls"], QUICK, 0, 19761, 10120)}
    assert again["stalls"].plan == found["stalls"].plan  # deterministic per seed
