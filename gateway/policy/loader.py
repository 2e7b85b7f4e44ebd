"""Read a policy from YAML text or a file: parse, validate (schema) and compile.

YAML duplicate keys are refused (PyYAML silently keeps the last one, which would hide a
duplicated model name). YAML errors name the file; an unknown key names the closest allowed
one at its place ("did you mean").
"""

from __future__ import annotations

import types
import typing
from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from gateway.policy.compile import CompiledPolicy, compile_policy
from gateway.schema import Policy
from gateway.schema.problems import FieldProblem, PolicyError
from gateway.schema.suggest import did_you_mean


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
    loader = _UniqueKeyLoader(text)
    loader.name = source  # YAML errors name the file, not "<unicode string>"
    try:
        data = loader.get_single_data()
    except yaml.YAMLError as exc:
        raise PolicyError(source, [FieldProblem("", f"not valid YAML: {exc}")]) from exc
    finally:
        loader.dispose()
    if not isinstance(data, dict):
        raise PolicyError(source, [FieldProblem("", "the policy must be a YAML mapping")])
    try:
        return Policy.model_validate(data)
    except ValidationError as exc:
        raise PolicyError(source, _problems(exc)) from exc


def load_policy_text(text: str, *, source: str = "<policy>") -> CompiledPolicy:
    return compile_policy(parse_policy(text, source=source), source=source)


def load_policy_file(path: str | Path) -> CompiledPolicy:
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError(source, [FieldProblem("", f"cannot read: {exc}")]) from exc
    return load_policy_text(text, source=source)


def _problems(exc: ValidationError) -> list[FieldProblem]:
    return [
        FieldProblem(_dotted(err["loc"]), _reason(err)) for err in exc.errors(include_url=False)
    ]


def _reason(err: Any) -> str:
    if err["type"] == "extra_forbidden":
        loc = err["loc"]
        return "unknown key" + did_you_mean(str(loc[-1]), known_keys(Policy, loc[:-1]))
    message = str(err["msg"])
    return message.removeprefix("Value error, ")


def known_keys(model: type[BaseModel], loc: Sequence[int | str]) -> list[str]:
    """The keys allowed at ``loc`` (a validation error's path, through models, mappings and
    lists) below ``model``; empty when the path leads to no model."""
    node: Any = model
    for item in loc:
        node = _below(node, item)
        if node is None:
            return []
    found = _model(node)
    return list(found.model_fields) if found is not None else []


def _below(node: Any, item: int | str) -> Any:
    for option in typing.get_args(node) if _is_union(node) else (node,):
        found = _model(option)
        if found is not None and isinstance(item, str) and item in found.model_fields:
            return found.model_fields[item].annotation
        origin, args = typing.get_origin(option), typing.get_args(option)
        if origin is not None and issubclass(origin, Mapping) and len(args) == 2:
            return args[1]
        if origin in (list, tuple) and args and isinstance(item, int):
            return args[0]
    return None


def _model(node: Any) -> type[BaseModel] | None:
    for option in typing.get_args(node) if _is_union(node) else (node,):
        if isinstance(option, type) and issubclass(option, BaseModel):
            return option
    return None


def _is_union(node: Any) -> bool:
    return typing.get_origin(node) in (typing.Union, types.UnionType)


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
