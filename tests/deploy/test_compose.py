"""deploy/compose: ``docker-compose config`` accepts the file, and the services agree with each
other and with the code (command line, policy, fleet, ports, Prometheus, Grafana)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from gateway.policy import load_policy_file
from loadtests.sim.__main__ import parse_args as sim_args
from tests.deploy.conftest import DEPLOY, app_paths, run, serve_args, tool, yaml_file

COMPOSE = DEPLOY / "compose" / "docker-compose.yml"


@pytest.fixture(scope="module")
def services() -> dict[str, Any]:
    """The services as docker-compose resolves them (anchors merged, paths absolute)."""
    config = yaml.safe_load(run(tool("docker-compose"), "-f", str(COMPOSE), "config"))
    services: dict[str, Any] = config["services"]
    return services


def _host_path(service: dict[str, Any], inside: str) -> Path:
    """The host file a container path lies in, through the service's bind mounts."""
    for volume in service.get("volumes", []):
        source, target = (volume.split(":")[:2] if isinstance(volume, str)
                          else (volume["source"], volume["target"]))  # fmt: skip
        if inside == target or inside.startswith(target.rstrip("/") + "/"):
            return Path(source) / inside[len(target) :].lstrip("/")
    raise AssertionError(f"{inside} is not mounted")


def _gateways(services: dict[str, Any]) -> dict[str, Any]:
    return {n: s for n, s in services.items() if s.get("command", [None])[0] == "serve"}


def test_docker_compose_refuses_a_broken_file(tmp_path: Path) -> None:
    """The validator runs for real: an unknown service key fails it."""
    bad = tmp_path / "docker-compose.yml"
    bad.write_text("services:\n  a:\n    image: x\n    no_such_key: 1\n")
    done = subprocess.run(
        [tool("docker-compose"), "-f", str(bad), "config"], capture_output=True, timeout=60
    )
    assert done.returncode != 0


def test_two_gateways_share_one_policy_redis_and_fleet(services: dict[str, Any]) -> None:
    gateways = _gateways(services)
    assert len(gateways) >= 2
    policies = set()
    for gateway in gateways.values():
        args = serve_args(gateway["command"])
        assert args.host == "0.0.0.0"
        assert [p["target"] for p in gateway["ports"]] == [args.port]
        policies.add(_host_path(gateway, args.policy))
        assert set(gateway["depends_on"]) == {"redis", *_fleet(services)}
    assert len(policies) == 1
    policy = load_policy_file(policies.pop())
    source = policy.source
    assert source.cluster.enabled
    for url in (source.cluster.redis_url, source.cache.redis.url):
        parts = urlsplit(url)
        assert (parts.hostname, parts.port) == ("redis", 6379)  # Redis's own default port
    published = [p["published"] for g in gateways.values() for p in g["ports"]]
    assert len(set(published)) == len(published)
    # Docker stops a container after stop_grace_period: drain must fit in it.
    for gateway in gateways.values():
        assert int(gateway["stop_grace_period"].removesuffix("s")) > source.server.drain_timeout_s


def _fleet(services: dict[str, Any]) -> dict[str, Any]:
    """The simulated replicas' services (``python -m loadtests.sim``)."""
    return {
        name: service
        for name, service in services.items()
        if service.get("entrypoint") == ["python", "-m", "loadtests.sim"]
    }


def test_the_fleet_is_found_by_service_name(services: dict[str, Any]) -> None:
    """Each backend entry discovers its replicas by a fleet service's name (one address per
    container, so ``--scale`` needs no policy edit); each container runs one replica of the
    entry's model on the entry's port, on every interface."""
    gateway = next(iter(_gateways(services).values()))
    policy = load_policy_file(_host_path(gateway, serve_args(gateway["command"]).policy))
    fleet = _fleet(services)
    entries = policy.source.backends
    assert all(b.discover is not None for b in entries)  # nothing listed by address
    assert {b.discover.dns for b in entries if b.discover} == set(fleet)
    for entry in entries:
        assert entry.discover is not None
        service = fleet[entry.discover.dns]
        assert service["deploy"]["replicas"] >= 2
        fleet_at = service["command"][service["command"].index("--fleet") + 1]
        sim = sim_args(["--fleet", str(_host_path(service, fleet_at))])
        assert sim.host == "0.0.0.0"  # reachable from the other containers
        (group,) = sim.groups
        assert (group.replicas, group.base_port) == (1, entry.discover.port)
        assert (group.served_model, group.engine) == (entry.model, entry.engine.value)


def test_prometheus_scrapes_every_gateway_with_the_shipped_rules(
    services: dict[str, Any],
) -> None:
    prometheus = services["prometheus"]
    config_at = next(
        a.split("=", 1)[1] for a in prometheus["command"] if a.startswith("--config.file=")
    )
    config = yaml_file(_host_path(prometheus, config_at))
    gateways = _gateways(services)
    wanted = {f"{name}:{serve_args(g['command']).port}" for name, g in gateways.items()}
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    job = jobs["latency-gateway"]
    targets = {t for group in job["static_configs"] for t in group["targets"]}
    assert targets == wanted
    gateway = next(iter(gateways.values()))
    policy = load_policy_file(_host_path(gateway, serve_args(gateway["command"]).policy))
    assert job["metrics_path"] in app_paths(policy)
    # The fleet's containers, found by the names the gateways discover them by.
    (dns,) = jobs["vllm"]["dns_sd_configs"]
    discovered = {(b.discover.dns, b.discover.port) for b in policy.source.backends if b.discover}
    assert {(name, dns["port"]) for name in dns["names"]} == discovered
    assert dns["type"] == "A"
    rules_dir = str(Path(config_at).parent)
    for rule_file in config["rule_files"]:
        shipped = _host_path(prometheus, f"{rules_dir}/{rule_file}").resolve()
        assert shipped == (DEPLOY / "prometheus" / rule_file).resolve()


def test_grafana_provisions_prometheus_and_the_shipped_dashboards(
    services: dict[str, Any],
) -> None:
    grafana = services["grafana"]
    provisioning = "/etc/grafana/provisioning"
    sources = yaml_file(_host_path(grafana, f"{provisioning}/datasources/latency-gateway.yml"))
    (source,) = sources["datasources"]
    assert source["type"] == "prometheus"
    assert source["isDefault"]  # the dashboards' datasource variable picks the default
    assert urlsplit(source["url"]).hostname == "prometheus"
    assert "prometheus" in services
    providers = yaml_file(_host_path(grafana, f"{provisioning}/dashboards/latency-gateway.yml"))
    (provider,) = providers["providers"]
    folder = _host_path(grafana, provider["options"]["path"])
    assert folder.resolve() == (DEPLOY / "grafana").resolve()
    assert len(list(folder.glob("*.json"))) >= 4
