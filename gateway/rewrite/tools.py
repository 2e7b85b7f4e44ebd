"""Deterministic tool definitions: tools ordered by name, JSON object keys sorted.

Algorithm, each step only when asked (the ``tool_order`` and ``tool_schema_key_order``
transforms): a stable sort of the ``tools`` list by function name (ties keep their order),
then one ``orjson`` round trip with ``OPT_SORT_KEYS``, which rebuilds every object with its
keys sorted at C speed. JSON arrays keep their order: in a schema, ``required`` and ``enum``
order can be meaning. Malformed lists (an entry that is not an object, or values orjson
cannot encode) are returned untouched; the backend reports them to the client.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson


@dataclass(frozen=True, slots=True)
class CanonicalTools:
    tools: list[Any]
    reordered: bool
    keys_sorted: bool


def canonical_tools(tools: list[Any], *, order: bool, sort_keys: bool) -> CanonicalTools:
    """The tools in canonical form; the input is never modified."""
    if not tools or not all(isinstance(tool, dict) for tool in tools):
        return CanonicalTools(tools, False, False)
    ordered = sorted(tools, key=tool_name) if order else tools
    reordered = any(a is not b for a, b in zip(ordered, tools, strict=True))
    if not sort_keys:
        return CanonicalTools(ordered if reordered else tools, reordered, False)
    try:
        plain = orjson.dumps(ordered)
        sorted_keys = orjson.dumps(ordered, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:
        return CanonicalTools(ordered if reordered else tools, reordered, False)
    if plain == sorted_keys:
        return CanonicalTools(ordered if reordered else tools, reordered, False)
    return CanonicalTools(orjson.loads(sorted_keys), reordered, True)


def tool_name(tool: dict[str, Any]) -> str:
    """The name a tool is called by: ``function.name``, or a flat ``name``."""
    function = tool.get("function")
    name = function.get("name") if isinstance(function, dict) else tool.get("name")
    return name if isinstance(name, str) else ""
