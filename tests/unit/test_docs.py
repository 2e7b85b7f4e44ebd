"""The documentation cannot drift from the code: the site builds strict (no broken link or
anchor, no page outside the nav), the policy reference is the one the schema generates, every
policy field has a description, and the README stays a front door."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.commands.policy_reference import render, rows, undocumented
from tests.unit.test_layout import LAYERS, STAGES

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "operating" / "policy-reference.md"


def test_the_site_builds_strict(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "operating" / "policy-reference" / "index.html").exists()


def test_the_policy_reference_is_the_generated_one() -> None:
    assert REFERENCE.read_text(encoding="utf-8") == render(), (
        "docs/operating/policy-reference.md is stale: run `latency-gateway docs policy`"
    )


def test_every_policy_field_has_a_description() -> None:
    assert undocumented() == [], "describe these fields in gateway/schema/"


SCHEMA = {
    "$defs": {
        "Inner": {
            "title": "Inner",
            "properties": {"n": {"type": "integer", "minimum": 1, "default": 2}},
        }
    },
    "title": "Policy",
    "properties": {
        "a": {"type": "string", "description": "An A"},
        "items": {"type": "array", "items": {"$ref": "#/$defs/Inner"}, "description": "Some"},
        "named": {
            "type": "object",
            "patternProperties": {"^x$": {"$ref": "#/$defs/Inner"}},
            "description": "By name",
        },
    },
    "required": ["a"],
}


@pytest.mark.parametrize(
    ("path", "kind", "default", "bounds", "description"),
    [
        ("a", "string", "required", "", "An A"),
        ("items", "list of object", "", "", "Some"),
        ("items[].n", "integer", "`2`", ">= 1", ""),
        ("named", "map of name to object", "", "", "By name"),
        ("named.<name>.n", "integer", "`2`", ">= 1", ""),
    ],
)
def test_rows_of_a_schema(
    path: str, kind: str, default: str, bounds: str, description: str
) -> None:
    found = {row.path: row for row in rows(SCHEMA, "", SCHEMA["$defs"], {})}
    row = found[path]
    assert (row.type, row.default, row.bounds, row.description) == (
        kind,
        default,
        bounds,
        description,
    )


def test_an_undescribed_field_is_reported() -> None:
    assert undocumented(SCHEMA) == ["items[].n", "named.<name>.n"]


def test_the_readme_is_a_front_door() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; details belong in docs/"


def test_the_request_path_page_names_every_stage_and_package() -> None:
    page = (ROOT / "docs" / "concepts" / "request-path.md").read_text(encoding="utf-8")
    for stage in STAGES:
        assert f"`path/{stage}.py`" in page, f"stage {stage} missing from the request path page"
    for layer in LAYERS:
        for name in layer:
            if name != "gateway":
                assert f"`{name}/`" in page or f"`{name}.py`" in page, f"{name} not on the page"


def test_the_api_page_names_every_gateway_header() -> None:
    page = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    in_code = {
        name.rstrip("-")
        for path in (ROOT / "gateway").rglob("*.py")
        for name in re.findall(r"x-gateway-[a-z-]+", path.read_text(encoding="utf-8"))
    }
    assert in_code, "no x-gateway-* header found in the code"
    missing = sorted(name for name in in_code if f"`{name}" not in page)
    assert missing == [], f"headers the API page does not name: {missing}"


def test_the_alerts_page_names_every_alert_rule() -> None:
    page = (ROOT / "docs" / "operating" / "alerts.md").read_text(encoding="utf-8")
    rules = (ROOT / "deploy" / "prometheus" / "alerts.yml").read_text(encoding="utf-8")
    names = re.findall(r"alert:\s*(\w+)", rules)
    assert names, "no alert rule found"
    assert [name for name in names if f"`{name}`" not in page] == []
