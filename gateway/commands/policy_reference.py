"""``latency-gateway docs policy``: the policy reference, generated from the policy's schema.

Algorithm: the JSON Schema of ``gateway.schema.Policy`` (the one ``latency-gateway schema``
prints) is walked depth first from its top-level properties. Each property becomes one row
(its path, type, default, bounds and description); a property whose value is an object (a
section, a list of objects, a map of names to objects, or any of these or null) gets its own
row and then the rows of its fields, with ``[]`` for a list item and ``<name>`` for a map
key in the path (``pools.<name>.admission.objective.ttft_s``). ``$ref`` is resolved through
``$defs``. One table per top-level section, in the schema's order. A field without a
description is an error (``undocumented``), so the reference cannot silently lose one; the
docs test checks both that and that the committed page is what this renders.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from gateway.schema import Policy

DEFAULT_OUT = Path("docs/operating/policy-reference.md")
Schema = dict[str, Any]


@dataclass(frozen=True)
class Row:
    path: str
    type: str
    default: str
    bounds: str
    description: str


def policy_schema() -> Schema:
    return Policy.model_json_schema()


def _resolve(node: Schema, defs: Schema) -> Schema:
    ref = node.get("$ref")
    if ref is None:
        return node
    resolved: Schema = defs[ref.rsplit("/", 1)[1]]
    return resolved


def _branches(node: Schema, defs: Schema) -> list[Schema]:
    """The alternatives of a field, ``null`` left out."""
    options = node.get("anyOf", [node])
    return [_resolve(o, defs) for o in options if o.get("type") != "null"]


def _map_value(node: Schema) -> Schema:
    """The schema of a map's values (pydantic writes a constrained key as patternProperties)."""
    if isinstance(node.get("additionalProperties"), dict):
        value: Schema = node["additionalProperties"]
        return value
    patterns = list(node.get("patternProperties", {}).values())
    return patterns[0] if patterns else {}


def _nullable(node: Schema) -> bool:
    return any(o.get("type") == "null" for o in node.get("anyOf", []))


def type_name(node: Schema, defs: Schema) -> str:
    names = []
    for branch in _branches(node, defs):
        if "enum" in branch:
            names.append(" | ".join(f"`{json.dumps(v)}`" for v in branch["enum"]))
        elif "const" in branch:
            names.append(f"`{json.dumps(branch['const'])}`")
        elif "properties" in branch:
            names.append("object")
        elif branch.get("type") == "array":
            names.append(f"list of {type_name(branch.get('items', {}), defs)}")
        elif branch.get("type") == "object":
            names.append(f"map of name to {type_name(_map_value(branch), defs)}")
        else:
            names.append(str(branch.get("type", "any")))
    if _nullable(node):
        names.append("null")
    return " or ".join(names)


_BOUNDS = (
    ("minimum", ">= {}"),
    ("exclusiveMinimum", "> {}"),
    ("maximum", "<= {}"),
    ("exclusiveMaximum", "< {}"),
    ("minLength", "at least {} characters"),
    ("maxLength", "at most {} characters"),
    ("minItems", "at least {} items"),
    ("maxItems", "at most {} items"),
    ("minProperties", "at least {} entries"),
    ("pattern", "matches `{}`"),
)


def bounds(node: Schema, defs: Schema) -> str:
    found = []
    for branch in [node, *_branches(node, defs)]:
        for key, form in _BOUNDS:
            if key in branch and form.format(branch[key]) not in found:
                found.append(form.format(branch[key]))
        items = branch.get("items")
        if isinstance(items, dict) and branch.get("type") == "array":
            inner = bounds(items, defs)
            if inner:
                found.append(f"each item {inner}")
    return ", ".join(found)


def factory_defaults() -> dict[str, dict[str, Any]]:
    """Per model (by the schema's title, its class name), the defaults that come from a
    factory, which the JSON Schema leaves out (a list, a map, every volatile kind)."""
    found: dict[str, dict[str, Any]] = {}

    def walk(model: type[BaseModel]) -> None:
        if model.__name__ in found:
            return
        found[model.__name__] = {
            name: to_jsonable_python(info.get_default(call_default_factory=True))
            for name, info in model.model_fields.items()
            if info.default_factory is not None
        }
        for info in model.model_fields.values():
            for inner in _models_in(info.annotation):
                walk(inner)

    walk(Policy)
    return found


def _models_in(annotation: Any) -> Iterator[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
    for arg in get_args(annotation):
        yield from _models_in(arg)


def default(node: Schema, required: bool, defs: Schema, factory: dict[str, Any]) -> str:
    if "default" not in node and "value" not in factory:
        return "required" if required else ""
    value = node.get("default", factory.get("value"))
    if isinstance(value, dict) and value and _objects(node, defs):
        return "(its fields' defaults)"
    return f"`{json.dumps(value)}`"


def _objects(node: Schema, defs: Schema) -> list[tuple[str, Schema]]:
    """The object schemas below a field, with the path step that leads into each."""
    found = []
    for branch in _branches(node, defs):
        if "properties" in branch:
            found.append(("", branch))
        elif branch.get("type") == "array":
            for inner in _branches(branch.get("items", {}), defs):
                if "properties" in inner:
                    found.append(("[]", inner))
        elif branch.get("type") == "object":
            for inner in _branches(_map_value(branch), defs):
                if "properties" in inner:
                    found.append((".<name>", inner))
    return found


def rows(
    obj: Schema, prefix: str, defs: Schema, factories: dict[str, dict[str, Any]]
) -> Iterator[Row]:
    required = set(obj.get("required", ()))
    made = factories.get(str(obj.get("title", "Policy")), {})
    for name, node in obj.get("properties", {}).items():
        path = f"{prefix}.{name}" if prefix else name
        description = node.get("description") or _resolve(node, defs).get("description", "")
        yield Row(
            path,
            type_name(node, defs),
            default(node, name in required, defs, {"value": made[name]} if name in made else {}),
            bounds(node, defs),
            " ".join(str(description).split()),
        )
        for step, inner in _objects(node, defs):
            yield from rows(inner, path + step, defs, factories)


def undocumented(schema: Schema | None = None) -> list[str]:
    """Paths of the fields that have no description."""
    schema = policy_schema() if schema is None else schema
    defs = schema.get("$defs", {})
    return [row.path for row in rows(schema, "", defs, factory_defaults()) if not row.description]


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render(schema: Schema | None = None) -> str:
    schema = policy_schema() if schema is None else schema
    defs = schema.get("$defs", {})
    factories = factory_defaults()
    out = [
        "# Policy reference",
        "",
        "<!-- Generated by `latency-gateway docs policy` from the policy's schema "
        "(gateway/schema/); do not edit by hand. -->",
        "",
        "Every field of the policy file, generated from the schema the gateway validates it "
        "with, so it cannot drift from the code. Unknown keys are refused everywhere, and so "
        "are duplicate YAML keys. `latency-gateway schema` prints the same schema as JSON "
        "(`policies/schema.json`); `latency-gateway check FILE` validates a policy.",
        "",
        "In a path, `[]` is an item of a list and `<name>` a key of a map you choose "
        "(a pool's, a model's or a tenant's name).",
    ]
    for name, node in schema["properties"].items():
        top = {"title": "Policy", "properties": {name: node}, "required": schema["required"]}
        section = list(rows(top, "", defs, factories))
        out += ["", f"## `{name}`", "", _cell(section[0].description), ""]
        out += ["| field | type | default | bounds | description |", "|---|---|---|---|---|"]
        for row in section:
            cells = (f"`{row.path}`", row.type, row.default, row.bounds, row.description)
            out.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="latency-gateway docs policy", description=__doc__)
    ap.add_argument("--out", default=str(DEFAULT_OUT), help="file to write, - for stdout")
    args = ap.parse_args(argv)
    return write(args.out)


def write(out: str) -> int:
    missing = undocumented()
    if missing:
        print(f"fields without a description: {', '.join(missing)}", file=sys.stderr)
        return 1
    text = render()
    if out == "-":
        sys.stdout.write(text)
    else:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(text, encoding="utf-8")
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
