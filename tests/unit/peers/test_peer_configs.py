"""Config writers and launch plans of the peer comparison (no peer is started)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from loadtests.peers.configs import (
    RouterLimit,
    Upstream,
    litellm_config,
    nginx_conf,
    nginx_temp_dirs,
    vllm_router_argv,
)
from loadtests.peers.fleets import front_for, rename_model, shift_fleet, shift_policy
from loadtests.peers.install import Binaries, peer_home
from loadtests.peers.targets import MASTER_KEY, Front, Setup, plan_launch, port_of
from loadtests.sim.fleet import FleetConfig

UPS = (Upstream("http://127.0.0.1:9611", "m"), Upstream("http://127.0.0.1:9612", "m"))
BIN = Binaries(Path("/b/litellm"), Path("/b/vllm-router"), Path("/usr/sbin/nginx"))
FRONT = Front(UPS, "m", "hosted_vllm", "backends: []\n")


def test_litellm_config_has_one_deployment_per_upstream_and_no_retries() -> None:
    config = litellm_config("bench", UPS, provider="openai", routing_strategy="least-busy")
    assert [d["model_name"] for d in config["model_list"]] == ["bench", "bench"]
    assert config["model_list"][1]["litellm_params"]["model"] == "openai/m"
    assert config["model_list"][1]["litellm_params"]["api_base"] == "http://127.0.0.1:9612/v1"
    assert config["router_settings"] == {"routing_strategy": "least-busy", "num_retries": 0}


def test_writers_refuse_an_empty_fleet() -> None:
    with pytest.raises(ValueError, match="upstream"):
        litellm_config("bench", [])
    with pytest.raises(ValueError, match="upstream"):
        nginx_conf(Path("/r"), 1, [])
    with pytest.raises(ValueError, match="upstream"):
        vllm_router_argv(Path("/b"), 1, [])


def test_vllm_router_argv_with_and_without_a_limit() -> None:
    argv = vllm_router_argv(Path("/b/vr"), 8001, UPS, "cache_aware")
    assert argv[:5] == ["/b/vr", "--host", "127.0.0.1", "--port", "8001"]
    urls = argv[argv.index("--worker-urls") + 1 : argv.index("--policy")]
    assert urls == ["http://127.0.0.1:9611", "http://127.0.0.1:9612"]
    assert argv[argv.index("--policy") + 1] == "cache_aware"
    assert "--max-concurrent-requests" not in argv
    assert argv[argv.index("--prometheus-port") + 1] == "18001"  # not the fixed default
    limited = vllm_router_argv(Path("/b/vr"), 8001, UPS, limit=RouterLimit(48, 3, 1))
    assert limited[-6:] == ["--max-concurrent-requests", "48", "--queue-size", "3",
                            "--queue-timeout-secs", "1"]  # fmt: skip


def test_nginx_conf_keeps_everything_in_its_root() -> None:
    root = Path("/tmp/run/nginx")
    text = nginx_conf(root, 8005, UPS)
    assert "daemon off;" in text
    assert f"pid {root / 'nginx.pid'};" in text
    assert "listen 127.0.0.1:8005" in text
    assert "server 127.0.0.1:9611 max_fails=0;" in text
    assert "proxy_buffering off;" in text
    assert "keepalive 256;" in text
    assert 'proxy_set_header Connection "";' in text
    assert "least_conn" not in text
    assert "limit_conn" not in text
    for folder in nginx_temp_dirs(root):
        assert str(folder) in text


def test_nginx_conf_balancing_and_in_flight_cap() -> None:
    text = nginx_conf(Path("/r"), 8005, UPS, balance="least_conn", limit_conn=48)
    assert "least_conn;" in text
    # an empty key is never counted, so the zone's key must always be set
    assert "limit_conn_zone $server_addr zone=inflight:1m;" in text
    assert "limit_conn inflight 48;" in text
    assert "limit_conn_status 429;" in text


def test_upstream_needs_a_port() -> None:
    with pytest.raises(ValueError, match="port"):
        Upstream("http://example", "m").host_port()


def test_peer_home_follows_xdg_cache_home() -> None:
    assert peer_home({"XDG_CACHE_HOME": "/c"}) == Path("/c/latency-gateway/peers")
    assert peer_home({"HOME": "/h"}) == Path("/h/.cache/latency-gateway/peers")


def test_launch_plans(tmp_path: Path) -> None:
    setup = Setup(router_policy="cache_aware", nginx_limit=48)
    litellm = plan_launch("litellm", FRONT, setup, 8002, tmp_path, BIN)
    assert litellm.env is not None
    assert litellm.env["LITELLM_MASTER_KEY"] == MASTER_KEY != "sk-1234"
    assert litellm.env["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
    assert litellm.headers == {"authorization": f"Bearer {MASTER_KEY}"}
    written = yaml.safe_load(next(iter(litellm.files.values())))
    assert written["model_list"][0]["litellm_params"]["model"] == "hosted_vllm/m"
    router = plan_launch("vllm-router", FRONT, setup, 8003, tmp_path, BIN)
    assert router.health == "http://127.0.0.1:8003/health"
    assert "cache_aware" in router.argv
    nginx = plan_launch("nginx", FRONT, setup, 8004, tmp_path, BIN)
    assert "limit_conn inflight 48;" in next(iter(nginx.files.values()))
    gateway = plan_launch("gateway", FRONT, setup, 8001, tmp_path, BIN)
    assert gateway.model is None
    assert gateway.health == "http://127.0.0.1:8001/readyz"
    assert gateway.workers == 1
    two = plan_launch("gateway", replace(FRONT, gateway_workers=2), setup, 8001, tmp_path, BIN)
    assert two.workers == 2  # measured once both serve
    assert two.argv[-2:] == ["--workers", "2"]
    direct = plan_launch("direct", FRONT, setup, 8000, tmp_path, BIN)
    assert direct.argv == []
    with pytest.raises(ValueError, match="unknown target"):
        plan_launch("envoy", FRONT, setup, 8000, tmp_path, BIN)


def test_every_target_has_its_own_port() -> None:
    names = ("direct", "gateway", "litellm", "vllm-router", "nginx")
    assert len({port_of(n, 19850) for n in names}) == len(names)
    assert 19850 not in {port_of(n, 19850) for n in names}  # the fake's


def test_setup_notes_say_what_each_peer_cannot_do() -> None:
    notes = Setup(router_limit=RouterLimit(48, 3, 1), nginx_limit=48).notes()
    assert "no shedding" in notes["litellm"]
    assert "max 48 concurrent + queue 3" in notes["vllm-router"]
    assert "limit_conn 48" in notes["nginx"]
    assert "no shedding" in Setup().notes()["vllm-router"]


def test_fleet_and_policy_move_to_other_ports() -> None:
    fleet = FleetConfig.model_validate(
        {"groups": [{"name": "gpu", "profile": "p", "served_model": "m", "replicas": 2,
                     "base_port": 9611}]}
    )  # fmt: skip
    moved = shift_fleet(fleet, 10000)
    assert moved.groups[0].base_port == 19611
    assert fleet.groups[0].base_port == 9611
    policy = {"backends": [{"name": "a", "url": "http://127.0.0.1:9611"}], "models": {}}
    assert shift_policy(policy, 10000)["backends"][0]["url"] == "http://127.0.0.1:19611"
    front = front_for(moved, shift_policy(policy, 10000))
    assert [u.url for u in front.upstreams] == ["http://127.0.0.1:19611", "http://127.0.0.1:19612"]
    assert front.public_model == "m"
    assert yaml.safe_load(front.gateway_policy)["backends"][0]["url"].endswith(":19611")


def test_rename_model_changes_only_the_name() -> None:
    fleet = FleetConfig.model_validate(
        {"groups": [{"name": "gpu", "profile": "p", "served_model": "meta-llama/Llama-3",
                     "replicas": 2, "base_port": 9611}]}
    )  # fmt: skip
    policy = {"backends": [{"name": "a", "url": "u", "model": "meta-llama/Llama-3"}]}
    renamed, new_policy = rename_model(fleet, policy, "sim-8b")
    assert renamed.groups[0].served_model == "sim-8b"
    assert renamed.groups[0].profile == "p"
    assert new_policy["backends"][0] == {"name": "a", "url": "u", "model": "sim-8b"}


def test_nginx_paths_are_absolute_for_a_relative_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    launch = plan_launch("nginx", FRONT, Setup(), 8004, Path("out/run"), BIN)
    conf_path, text = next(iter(launch.files.items()))
    assert conf_path.is_absolute()
    assert f"pid {tmp_path / 'out/run/nginx/nginx.pid'};" in text
    assert all(Path(a).is_absolute() for a in launch.argv[2::2])
