"""Tool definitions: sorted by name, keys sorted, arrays and the input untouched."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from gateway.rewrite.tools import canonical_tools, tool_name
from tests.unit.rewrite.helpers import tool


def test_sorted_by_name_with_sorted_keys() -> None:
    tools = [
        {"type": "function", "function": {"parameters": {"z": 1, "a": [3, 1, 2]}, "name": "b"}},
        {"function": {"name": "a"}, "type": "function"},
    ]
    before = copy.deepcopy(tools)
    result = canonical_tools(tools, order=True, sort_keys=True)
    assert result.reordered
    assert result.keys_sorted
    assert [tool_name(t) for t in result.tools] == ["a", "b"]
    assert orjson.dumps(result.tools) == orjson.dumps(result.tools, option=orjson.OPT_SORT_KEYS)
    assert result.tools[1]["function"]["parameters"]["a"] == [3, 1, 2]  # arrays keep order
    assert tools == before


def test_ties_keep_their_order_and_canonical_input_is_returned_as_is() -> None:
    tools = [tool("a", x={"type": "string"}), tool("a"), tool("b")]
    sorted_once = canonical_tools(tools, order=True, sort_keys=True).tools
    again = canonical_tools(sorted_once, order=True, sort_keys=True)
    assert again.tools is sorted_once
    assert not again.reordered
    assert not again.keys_sorted
    assert [t["function"]["parameters"]["properties"] for t in sorted_once][:2] == [
        {"x": {"type": "string"}},
        {},
    ]


def test_flat_and_nameless_tools() -> None:
    tools: list[Any] = [{"type": "web_search"}, {"name": "c", "type": "custom"}]
    result = canonical_tools(tools, order=True, sort_keys=True)
    assert [tool_name(t) for t in result.tools] == ["", "c"]


def test_malformed_lists_are_left_alone() -> None:
    not_objects: list[Any] = [tool("b"), "a"]
    assert canonical_tools(not_objects, order=True, sort_keys=True).tools is not_objects
    unencodable: list[Any] = [{"function": {"name": "b"}, "x": {1: 2}}, tool("a")]
    result = canonical_tools(unencodable, order=True, sort_keys=True)
    assert [tool_name(t) for t in result.tools] == ["a", "b"]
    assert result.reordered
    assert not result.keys_sorted
    assert canonical_tools([], order=True, sort_keys=True).tools == []


# id -> (order, sort_keys, names after, keys of b's parameters after)
SEPARATE: dict[str, tuple[bool, bool, list[str], list[str]]] = {
    "order only": (True, False, ["a", "b"], ["z", "a"]),
    "keys only": (False, True, ["b", "a"], ["a", "z"]),
    "neither": (False, False, ["b", "a"], ["z", "a"]),
}


@pytest.mark.parametrize(
    ("order", "sort_keys", "names", "keys"), SEPARATE.values(), ids=list(SEPARATE)
)
def test_order_and_keys_are_separate_choices(
    order: bool, sort_keys: bool, names: list[str], keys: list[str]
) -> None:
    tools = [
        {"function": {"name": "b", "parameters": {"z": 1, "a": 2}}},
        {"function": {"name": "a"}},
    ]
    result = canonical_tools(tools, order=order, sort_keys=sort_keys)
    assert [tool_name(t) for t in result.tools] == names
    assert list(result.tools[names.index("b")]["function"]["parameters"]) == keys
    assert result.reordered is order
    assert result.keys_sorted is sort_keys
    if not (order or sort_keys):
        assert result.tools is tools
