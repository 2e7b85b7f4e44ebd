"""The Grafana dashboards and Prometheus alert rules in ``deploy/`` parse as PromQL and query
only metrics the gateway exposes, and the dashboards are what ``deploy/grafana/generate.py``
writes."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType

import httpx2 as httpx
import openai
import promql_parser
import pytest
import yaml

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
SUFFIXES = ("_bucket", "_count", "_sum", "_total", "_created")
LABEL_VALUES = re.compile(r"^label_values\((\w+), *(\w+)\)$")
# What an operator needs to see of SLO-first admission, per pool (issue 18), by family.
SHEDDING = {
    "gateway_ttft_objective_seconds",
    "gateway_ttft_predicted_seconds",
    "gateway_time_to_first_token_seconds",
    "gateway_ttft_prediction_error_seconds",
    "gateway_shed",
    "gateway_queue_depth",
    "gateway_retry_after_seconds",
}

# What an operator needs to see after dispatch, per pool (issue 32), by family.
AFTER_DISPATCH = {
    "gateway_hedges",
    "gateway_failovers",
    "gateway_continuations",
    "gateway_admitted",
}


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


def _metrics(expr: str) -> set[str]:
    """The metric names an expression selects, from its parsed syntax tree (Grafana's
    variables are replaced by values first: ``$pool`` by a regex that matches any pool)."""
    names: set[str] = set()

    def visit(node: promql_parser.Expr) -> None:
        if isinstance(node, promql_parser.VectorSelector) and node.name is not None:
            names.add(node.name)

    promql_parser.walk(promql_parser.parse(expr.replace("$pool", ".*")), pre_visit=visit)
    return names


def _family(name: str) -> str:
    for suffix in SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        ('sum by (pool) (rate(gateway_shed_total{pool=~"$pool"}[1m]))', {"gateway_shed_total"}),
        ("a_sum / b_count", {"a_sum", "b_count"}),
        ('histogram_quantile(0.9, sum by (le) (rate(x_bucket{a="b"}[5m])))', {"x_bucket"}),
    ],
)
def test_metric_names_come_from_the_parsed_query(expr: str, names: set[str]) -> None:
    assert _metrics(expr) == names


@pytest.mark.parametrize(
    ("broken", "why"),
    [
        ("sum by (pool (rate(x[1m]))", "unclosed left parenthesis"),
        ("sum(rate(x[1m])))", "unexpected right parenthesis"),
        ("rate(x)", "expected type matrix"),
    ],
)
def test_a_query_that_does_not_parse_is_refused(broken: str, why: str) -> None:
    with pytest.raises(ValueError, match=re.escape(why)):
        _metrics(broken)


def test_dashboards_are_generated() -> None:
    generator = _generator()
    for name, dashboard in generator.dashboards().items():
        assert (DEPLOY / "grafana" / name).read_text() == generator.render(dashboard), (
            f"{name} is stale: run python deploy/grafana/generate.py"
        )


def test_load_shedding_shows_the_slo_decisions_per_pool() -> None:
    dashboard = json.loads((DEPLOY / "grafana" / "load-shedding.json").read_text())
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert LABEL_VALUES.match(variables["pool"]["definition"])
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    queried = {_family(m) for expr in exprs for m in _metrics(expr)}
    assert queried >= SHEDDING, SHEDDING - queried
    assert all("$pool" in expr for expr in exprs)  # every panel follows the pool picked
    shed = next(p for p in dashboard["panels"] if "by cause" in p["title"])
    assert "cause, priority" in shed["targets"][0]["expr"]
    state = next(p for p in dashboard["panels"] if p["title"].startswith("Pool state"))
    assert "gateway_pool_state" in state["targets"][0]["expr"]


def test_after_dispatch_shows_recovery_per_pool() -> None:
    dashboard = json.loads((DEPLOY / "grafana" / "after-dispatch.json").read_text())
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert LABEL_VALUES.match(variables["pool"]["definition"])
    exprs = {p["title"]: t["expr"] for p in dashboard["panels"] for t in p["targets"]}
    queried = {_family(m) for expr in exprs.values() for m in _metrics(expr)}
    assert queried >= AFTER_DISPATCH, AFTER_DISPATCH - queried
    assert all("$pool" in expr for expr in exprs.values())  # every panel follows the pool picked
    by_label = {"Hedges": "pool, event", "Failovers": "pool, reason", "Streams cut": "pool, result"}
    for start, by in by_label.items():
        (expr,) = (e for title, e in exprs.items() if title.startswith(start))
        assert f"sum by ({by})" in expr, (start, expr)
    (share,) = (e for title, e in exprs.items() if title.startswith("Extra load"))
    # A pool that never hedged (no series) still has a share: its failovers over admitted.
    assert share.count(" or ") == 2
    assert 'event="sent"' in share


def test_every_queried_metric_exists(gateway: str, client: openai.OpenAI) -> None:
    for stream in (False, True):
        client.chat.completions.create(
            model="fast", messages=[{"role": "user", "content": "hi"}], stream=stream
        )
    text = httpx.get(gateway + "/metrics").text
    families = {_family(ln.split()[2]) for ln in text.splitlines() if ln.startswith("# TYPE ")}
    queries = _queries()
    assert len(queries) >= 40
    missing = {
        where: sorted(m for m in _metrics(expr) if _family(m) not in families)
        for where, expr in queries.items()
    }
    assert {w: m for w, m in missing.items() if m} == {}
    for path in sorted((DEPLOY / "grafana").glob("*.json")):
        for variable in json.loads(path.read_text())["templating"]["list"]:
            found = LABEL_VALUES.match(variable.get("definition", "label_values(gateway_x, y)"))
            assert found is not None, (path.name, variable)
            if variable["type"] == "query":
                assert _family(found[1]) in families, (path.name, variable["name"])
    assert len(json.loads((DEPLOY / "grafana" / "latency.json").read_text())["panels"]) >= 6
