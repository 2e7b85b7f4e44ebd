"""Read a policy from YAML text or a file: parse, validate (schema) and compile.

YAML duplicate keys are refused (PyYAML silently keeps the last one, which would hide a
duplicated model name).
"""

from __future__ import annotations

from collections.abc import Hashable
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from gateway.policy.compile import CompiledPolicy, compile_policy
from gateway.policy.discovered import Found
from gateway.schema import Policy
from gateway.schema.problems import FieldProblem, PolicyError


class _UniqueKeyLoader(yaml.SafeLoader):
    pass


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    mapping: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, Hashable):
            raise yaml.constructor.ConstructorError(
                None, None, f"unhashable key {key!r}", key_node.start_mark
            )
        if key in mapping:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        mapping[key] = loader.construct_object(value_node, deep=True)
    return mapping


_UniqueKeyLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    _construct_mapping,
)


def parse_policy(text: str, *, source: str = "<policy>") -> Policy:
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)
    except yaml.YAMLError as exc:
        raise PolicyError(source, [FieldProblem("", f"not valid YAML: {exc}")]) from exc
    if not isinstance(data, dict):
        raise PolicyError(source, [FieldProblem("", "the policy must be a YAML mapping")])
    try:
        return Policy.model_validate(data)
    except ValidationError as exc:
        raise PolicyError(source, _problems(exc)) from exc


def load_policy_text(
    text: str, *, source: str = "<policy>", found: Found | None = None
) -> CompiledPolicy:
    """``found``: replicas discovered so far (``discovered.expand``)."""
    return compile_policy(parse_policy(text, source=source), source=source, found=found)


def load_policy_file(path: str | Path, found: Found | None = None) -> CompiledPolicy:
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError(source, [FieldProblem("", f"cannot read: {exc}")]) from exc
    return load_policy_text(text, source=source, found=found)


def _problems(exc: ValidationError) -> list[FieldProblem]:
    return [
        FieldProblem(_dotted(err["loc"]), _reason(err)) for err in exc.errors(include_url=False)
    ]


def _reason(err: Any) -> str:
    if err["type"] == "extra_forbidden":
        return "unknown key"
    message = str(err["msg"])
    return message.removeprefix("Value error, ")


def _dotted(loc: tuple[int | str, ...]) -> str:
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        elif parts:
            parts.append(f".{item}")
        else:
            parts.append(str(item))
    return "".join(parts)
