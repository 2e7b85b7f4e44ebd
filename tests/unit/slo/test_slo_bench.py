"""The benchmark's gateway policies are valid for the gateway's own loader; mode sizes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from gateway.policy.loader import load_policy_text
from loadtests.kit.cli_words import sized
from loadtests.peers.fleets import front_for, rename_model, shift_fleet
from loadtests.peers.install import Binaries
from loadtests.peers.load_suite import Bench
from loadtests.peers.targets import TARGETS as PEER_TARGETS
from loadtests.peers.targets import port_of
from loadtests.sim.fleet import load_fleet
from loadtests.slo.bench import (
    SERVED_MODEL,
    Arena,
    default_policy,
    overload_policy,
    own_ports,
    peer_setup,
)
from loadtests.slo.cli import _parser
from loadtests.slo.program import FULL, QUICK
from loadtests.slo.ramps import SLOTS8, ramp
from loadtests.slo.refuser import BODY, refuser_conf
from loadtests.slo.replicas import cluster_policy, redis_argv
from loadtests.slo.runs import Knobs, ramp_bench

ROOT = Path(__file__).resolve().parents[3]


def _fleet():  # type: ignore[no-untyped-def]
    fleet = shift_fleet(load_fleet(ROOT / "loadtests/sim/fleets/slo.yaml"), 10000)
    fleet, _ = rename_model(fleet, default_policy(fleet), SERVED_MODEL)
    return fleet


def test_default_policy_has_backends_and_models_only() -> None:
    policy = default_policy(_fleet())
    assert set(policy) == {"backends", "models"}
    assert [b["url"] for b in policy["backends"]] == ["http://127.0.0.1:19651",
                                                      "http://127.0.0.1:19652"]  # fmt: skip
    assert all(set(b) == {"name", "url", "engine", "model", "pool"} for b in policy["backends"])
    compiled = load_policy_text(yaml.safe_dump(policy))
    assert compiled is not None
    assert policy["models"] == {SERVED_MODEL: {"pool": "slo"}}


def test_overload_policy_moves_backends_onto_the_fleet() -> None:
    source = yaml.safe_load((ROOT / "policies/bench-overload.yaml").read_text())
    policy = overload_policy(source, _fleet())
    assert [b["url"] for b in policy["backends"]] == ["http://127.0.0.1:19651",
                                                      "http://127.0.0.1:19652"]  # fmt: skip
    assert [b["name"] for b in policy["backends"]] == [b["name"] for b in source["backends"]]
    assert {b["model"] for b in policy["backends"]} == {SERVED_MODEL}
    assert policy["pools"] == source["pools"]
    assert policy["models"][SERVED_MODEL] == {"pool": source["backends"][0]["pool"]}
    load_policy_text(yaml.safe_dump(policy))


def test_overload_policy_needs_one_backend_per_replica() -> None:
    source = {"backends": [{"name": "a", "url": "http://x:1", "pool": "p", "model": "m"}]}
    with pytest.raises(ValueError, match="1 backends, the fleet 2"):
        overload_policy(source, _fleet())


def test_nginx_cap_is_the_peer_setup() -> None:
    assert "limit_conn 13 (429 beyond)" in peer_setup(13).notes()["nginx"]


@pytest.mark.parametrize(
    ("argv", "bursty_s", "cold", "timeout"),
    [
        ([], FULL.bursty_s, FULL.cold_requests, FULL.client_timeout_s),
        (["--quick"], QUICK.bursty_s, QUICK.cold_requests, QUICK.client_timeout_s),
        (["--quick", "--cold-requests", "300"], QUICK.bursty_s, 300, QUICK.client_timeout_s),
        (["--bursty-duration", "5", "--client-timeout", "60"], 5.0, FULL.cold_requests, 60.0),
    ],
)
def test_explicit_flags_win_over_the_mode(
    argv: list[str], bursty_s: float, cold: int, timeout: float
) -> None:
    sizes = sized(_parser().parse_args(argv), QUICK, FULL)
    assert (sizes.bursty_s, sizes.cold_requests, sizes.client_timeout_s) == (bursty_s, cold,
                                                                             timeout)  # fmt: skip


def test_the_refuser_answers_503_at_once_and_says_so(tmp_path: Path) -> None:
    text = refuser_conf(tmp_path, 19890)
    assert "listen 127.0.0.1:19890" in text
    assert "return 503 '" in text
    assert "add_header Retry-After 1 always;" in text
    assert "add_header x-gateway-queue-ms 0 always;" in text
    assert "proxy_pass" not in text  # nothing behind it
    assert json.loads(BODY)["error"]["type"] == "service_unavailable"


def test_the_cluster_variant_turns_cluster_admission_on() -> None:
    policy = yaml.safe_dump(default_policy(_fleet()))
    clustered = yaml.safe_load(cluster_policy(policy, "redis://127.0.0.1:19893/0"))
    assert clustered["cluster"] == {"enabled": True, "redis_url": "redis://127.0.0.1:19893/0"}
    assert clustered["backends"] == yaml.safe_load(policy)["backends"]
    load_policy_text(yaml.safe_dump(clustered))
    argv = redis_argv("/usr/bin/redis-server", 19893, Path("/tmp/r"))
    assert argv[:3] == ["/usr/bin/redis-server", "--port", "19893"]
    assert "--save" in argv


def test_a_ramp_runs_on_its_own_engine_behind_the_same_ports(tmp_path: Path) -> None:
    fleet = _fleet()
    policy = default_policy(fleet)
    bench = Bench(fleet, tmp_path / "fleet.yaml", front_for(fleet, policy), peer_setup(13),
                  tmp_path, 19870, Binaries(Path("l"), Path("r"), Path("n")))  # fmt: skip
    arena = Arena(bench, "")
    knobs = Knobs(tmp_path, 30.0, 60.0, 1.0, 10000)
    ramped = ramp_bench(ramp(SLOTS8, "4:1", 0, SERVED_MODEL), arena, knobs)
    assert [u.url for u in ramped.front.upstreams] == ["http://127.0.0.1:19681"]
    assert ramped.fleet_path == tmp_path / "fleet-ramp8.yaml"
    assert load_fleet(ramped.fleet_path).groups[0].max_num_seqs == 8
    assert ramped.setup.nginx_limit is None  # a plain proxy on the ramps
    assert yaml.safe_load(ramped.front.gateway_policy)["models"] == {
        SERVED_MODEL: {"pool": "ramp8"}
    }
    assert (ramped.base_port, ramped.binaries) == (bench.base_port, bench.binaries)


@pytest.mark.parametrize(
    ("name", "ports"),
    [("refuse-all", (19876,)), ("gateway-x2", (19877, 19878)),
     ("gateway-x2-cluster", (19877, 19878, 19879)), ("gateway", ()), ("nginx", ())],
)  # fmt: skip
def test_own_ports_stay_in_the_base_ports_block(name: str, ports: tuple[int, ...]) -> None:
    assert own_ports(name, 19870) == ports
    assert not set(ports) & {port_of(t, 19870) for t in PEER_TARGETS}
