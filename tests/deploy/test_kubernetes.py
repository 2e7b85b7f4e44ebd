"""deploy/kubernetes: ``kubectl kustomize`` renders it, kubernetes-validate accepts every object
against the newest Kubernetes schema it ships (offline), the ServiceMonitor (a CRD it has no
schema for) has the structure the Prometheus Operator reads, and the manifests agree with the
code: command line, port, probe paths, drain time, policy location, env, metric names."""

from __future__ import annotations

import copy
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import urlsplit

import kubernetes_validate
import pytest
import yaml
from kubernetes_validate.utils import latest_version

from gateway.policy.compile import CompiledPolicy, compile_policy
from gateway.policy.loader import parse_policy
from tests.deploy.conftest import DEPLOY, app_paths, gauge_names, run, serve_args, tool, yaml_file

KUSTOMIZE_DIR = DEPLOY / "kubernetes"
CRD_KINDS = {("monitoring.coreos.com/v1", "ServiceMonitor")}
Doc = dict[str, Any]


@pytest.fixture(scope="module")
def objects() -> dict[tuple[str, str], Doc]:
    rendered = run(tool("kubectl"), "kustomize", str(KUSTOMIZE_DIR))
    docs = [d for d in yaml.safe_load_all(rendered) if d]
    return {(d["kind"], d["metadata"]["name"]): d for d in docs}


@pytest.fixture(scope="module")
def gateway(objects: dict[tuple[str, str], Doc]) -> Doc:
    return objects[("Deployment", "latency-gateway")]


@pytest.fixture(scope="module")
def container(gateway: Doc) -> Doc:
    (only,) = gateway["spec"]["template"]["spec"]["containers"]
    result: Doc = only
    return result


@pytest.fixture(scope="module")
def policy(objects: dict[tuple[str, str], Doc], container: Doc) -> CompiledPolicy:
    path = PurePosixPath(serve_args(container["args"]).policy)
    data = objects[("ConfigMap", "latency-gateway-policy")]["data"]
    # The container's environment: the upstream keys the policy names must be in it.
    env = {e["name"]: "set-by-a-secret" for e in container.get("env", [])}
    return compile_policy(parse_policy(data[path.name]), source=str(path), env=env)


def test_every_object_validates_against_the_newest_schema(
    objects: dict[tuple[str, str], Doc],
) -> None:
    version = latest_version()
    assert int(version.split(".")[1]) >= 33, "a current Kubernetes schema"
    checked = set()
    for doc in objects.values():
        if (doc["apiVersion"], doc["kind"]) in CRD_KINDS:
            continue
        kubernetes_validate.validate(doc, version, strict=True)
        checked.add(doc["kind"])
    wanted = {"Namespace", "ConfigMap", "Service", "Deployment"}
    assert wanted | {"HorizontalPodAutoscaler", "PodDisruptionBudget"} <= checked


@pytest.mark.parametrize(
    "break_it",
    [
        lambda d: d["spec"]["template"]["spec"].update(terminationGracePeriodSecond=5),
        lambda d: d["spec"].update(replicas="two"),
        lambda d: d["spec"]["template"]["spec"]["containers"][0].pop("name"),
    ],
    ids=["unknown-field", "wrong-type", "missing-required"],
)
def test_the_validator_refuses_broken_objects(gateway: Doc, break_it: Any) -> None:
    broken = copy.deepcopy(gateway)
    break_it(broken)
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, latest_version(), strict=True)


def test_servicemonitor_scrapes_the_gateway_service(objects: dict[tuple[str, str], Doc]) -> None:
    monitor = objects[("ServiceMonitor", "latency-gateway")]
    service = objects[("Service", "latency-gateway")]
    assert monitor["metadata"]["namespace"] == service["metadata"]["namespace"]
    assert set(monitor["spec"]) <= {"selector", "endpoints", "namespaceSelector", "jobLabel"}
    selector = monitor["spec"]["selector"]["matchLabels"]
    assert selector.items() <= service["metadata"]["labels"].items()
    port_names = {p["name"] for p in service["spec"]["ports"]}
    for endpoint in monitor["spec"]["endpoints"]:
        assert set(endpoint) <= {"port", "path", "interval", "scrapeTimeout", "scheme"}
        assert endpoint["port"] in port_names
        assert endpoint["path"] == "/metrics"


def test_container_runs_the_gateway_as_the_cli_reads_it(
    gateway: Doc, container: Doc, policy: CompiledPolicy
) -> None:
    args = serve_args(container["args"])
    assert args.host == "0.0.0.0"
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"http": args.port}
    paths = app_paths(policy)
    probes = {
        k: container[k]["httpGet"] for k in ("startupProbe", "livenessProbe", "readinessProbe")
    }
    assert probes["livenessProbe"]["path"] == "/healthz"
    assert probes["readinessProbe"]["path"] == "/readyz"
    for probe in probes.values():
        assert probe["path"] in paths
        assert ports.get(probe["port"], probe["port"]) == args.port


def test_policy_is_the_configmap_mounted_as_a_folder(
    gateway: Doc, container: Doc, objects: dict[tuple[str, str], Doc]
) -> None:
    path = PurePosixPath(serve_args(container["args"]).policy)
    volumes = {v["name"]: v for v in gateway["spec"]["template"]["spec"]["volumes"]}
    (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == str(path.parent)]
    # A subPath mount never sees ConfigMap updates; the folder does (and hot reload with it).
    assert "subPath" not in mount
    source = volumes[mount["name"]]["configMap"]["name"]
    configmap = objects[("ConfigMap", source)]
    assert path.name in configmap["data"]
    # The ConfigMap keeps its name across edits (hot reload, not a rollout).
    kustomization = yaml_file(KUSTOMIZE_DIR / "kustomization.yaml")
    assert kustomization["generatorOptions"]["disableNameSuffixHash"] is True


def test_termination_grace_covers_prestop_and_drain(gateway: Doc, container: Doc,
                                                    policy: CompiledPolicy) -> None:  # fmt: skip
    spec = gateway["spec"]["template"]["spec"]
    command = container["lifecycle"]["preStop"]["exec"]["command"]
    assert command[0] == "sleep"
    pre_stop = int(command[1])
    drain = policy.source.server.drain_timeout_s
    slack = spec["terminationGracePeriodSeconds"] - pre_stop - drain
    assert 0 < slack <= 10, "the grace period is preStop + drain_timeout_s + a few seconds"


def test_security_replicas_and_resources(gateway: Doc, container: Doc) -> None:
    spec = gateway["spec"]
    assert spec["replicas"] >= 2
    assert spec["template"]["spec"]["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    resources = container["resources"]
    assert {"cpu", "memory"} <= set(resources["requests"])
    assert "memory" in resources["limits"]


def test_env_is_what_the_gateway_reads(container: Doc, policy: CompiledPolicy) -> None:
    names = {e["name"] for e in container.get("env", [])}
    keys = {b.api_key_env for b in policy.source.backends if b.api_key_env}
    proxies = {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"}
    assert keys <= names  # every upstream key the policy names
    assert names <= {"HF_HUB_OFFLINE"} | keys | proxies
    assert {e["name"]: e.get("value") for e in container["env"]}["HF_HUB_OFFLINE"] == "1"


def test_labels_select_the_gateway_pods(objects: dict[tuple[str, str], Doc], gateway: Doc) -> None:
    pod_labels = gateway["spec"]["template"]["metadata"]["labels"]
    assert gateway["spec"]["selector"]["matchLabels"] == pod_labels
    service = objects[("Service", "latency-gateway")]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    assert {p["targetPort"] for p in service["spec"]["ports"]} == {"http"}
    pdb = objects[("PodDisruptionBudget", "latency-gateway")]
    assert pdb["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    assert pdb["spec"]["minAvailable"] < gateway["spec"]["replicas"]


def test_hpa_scales_on_a_gateway_gauge_the_adapter_serves(
    objects: dict[tuple[str, str], Doc], gateway: Doc
) -> None:
    hpa = objects[("HorizontalPodAutoscaler", "latency-gateway")]["spec"]
    target = hpa["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", gateway["metadata"]["name"])
    assert hpa["minReplicas"] >= 2
    assert hpa["minReplicas"] <= gateway["spec"]["replicas"] <= hpa["maxReplicas"]
    (metric,) = hpa["metrics"]
    assert metric["type"] == "Pods"
    name = metric["pods"]["metric"]["name"]
    rules = yaml_file(KUSTOMIZE_DIR / "prometheus-adapter" / "values.yaml")["rules"]["custom"]
    (rule,) = [r for r in rules if r["name"]["as"] == name]
    series = rule["seriesQuery"].split("{", 1)[0].strip("'\"")
    assert series in gauge_names()  # a gauge the gateway exports
    assert rule["resources"]["overrides"]["pod"] == {"resource": "pod"}
    assert "<<.GroupBy>>" in rule["metricsQuery"]


def test_redis_is_where_the_policy_looks(
    objects: dict[tuple[str, str], Doc], policy: CompiledPolicy
) -> None:
    url = urlsplit(policy.source.cluster.redis_url)
    service = objects[("Service", url.hostname or "")]
    assert url.port in {p["port"] for p in service["spec"]["ports"]}
    redis = objects[("Deployment", url.hostname or "")]
    assert redis["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"] is True


def test_backends_are_found_by_headless_service_names(policy: CompiledPolicy) -> None:
    """Replicas come and go with the pods: the policy names Services, never pod addresses,
    and a name that is not fully qualified resolves in the gateway's own namespace."""
    entries = policy.source.backends
    assert entries
    for entry in entries:
        assert entry.url is None
        assert entry.discover is not None
        assert entry.discover.scheme == "http"
        assert "." not in entry.discover.dns or entry.discover.dns.endswith(".svc.cluster.local")
