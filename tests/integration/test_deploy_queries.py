"""The Grafana dashboards and Prometheus alert rules in ``deploy/`` query only metrics the
gateway exposes, and the dashboards are what ``deploy/grafana/generate.py`` writes."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType

import httpx2 as httpx
import openai
import yaml

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
METRIC = re.compile(r"\bgateway_[a-z0-9_]+")
SUFFIXES = ("_bucket", "_count", "_sum", "_total", "_created")


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generate", DEPLOY / "grafana" / "generate.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _queries() -> dict[str, str]:
    """Every PromQL expression, by where it lives."""
    found: dict[str, str] = {}
    for path in sorted((DEPLOY / "grafana").glob("*.json")):
        for panel in json.loads(path.read_text())["panels"]:
            for target in panel["targets"]:
                found[f"{path.name}: {panel['title']} {target['refId']}"] = target["expr"]
    rules = yaml.safe_load((DEPLOY / "prometheus" / "alerts.yml").read_text())
    for group in rules["groups"]:
        for rule in group["rules"]:
            found[f"alerts.yml: {rule['alert']}"] = rule["expr"]
    return found


def _family(name: str) -> str:
    for suffix in SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def test_dashboards_are_generated() -> None:
    generator = _generator()
    for name, dashboard in generator.dashboards().items():
        assert (DEPLOY / "grafana" / name).read_text() == generator.render(dashboard), (
            f"{name} is stale: run python deploy/grafana/generate.py"
        )


def test_every_queried_metric_exists(gateway: str, client: openai.OpenAI) -> None:
    for stream in (False, True):
        client.chat.completions.create(
            model="fast", messages=[{"role": "user", "content": "hi"}], stream=stream
        )
    text = httpx.get(gateway + "/metrics").text
    families = {_family(ln.split()[2]) for ln in text.splitlines() if ln.startswith("# TYPE ")}
    queries = _queries()
    assert len(queries) >= 30
    missing = {
        where: sorted({m for m in METRIC.findall(expr) if _family(m) not in families})
        for where, expr in queries.items()
    }
    assert {w: m for w, m in missing.items() if m} == {}
    assert len(json.loads((DEPLOY / "grafana" / "latency.json").read_text())["panels"]) >= 6
