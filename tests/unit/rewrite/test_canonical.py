"""Canonicalisation: stable prefixes, note placement, parts, completions, no mutation."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gateway.rewrite import NotePlacement, RewriteConfig, Transform, canonicalize
from gateway.rewrite.note import SEPARATOR
from tests.unit.rewrite.helpers import chat, restore, tool

SYSTEM = "You are helpful.\nCurrent time: {time}. Request id: {rid}.\nSession {uuid} open."

# id -> (two values of the same format)
VALUES: dict[str, tuple[str, str]] = {
    "iso": ("2026-11-21T14:03:07Z", "2026-11-21T14:05:59Z"),
    "rfc2822": ("Sat, 21 Nov 2026 14:03:07 +0000", "Sun, 22 Nov 2026 09:00:00 +0000"),
    "plain datetime": ("2026-11-21 14:03:07", "2026-11-22 01:00:00"),
    "month name": ("Nov 21, 2026", "Dec 2, 2026"),
    "epoch": ("time: 1795298300", "time: 1795298999"),
}


@pytest.mark.parametrize(("first", "second"), VALUES.values(), ids=list(VALUES))
@pytest.mark.parametrize("placement", list(NotePlacement))
def test_system_prefix_is_byte_identical(first: str, second: str, placement: NotePlacement) -> None:
    config = RewriteConfig(note_placement=placement)
    bodies = [
        chat(
            ("system", SYSTEM.format(time=value, rid=rid, uuid=uid)),
            ("user", "Hi"),
        )
        for value, rid, uid in (
            (first, "req_8f3a2b", "3f2a1c4e-1b2c-4d5e-8f90-0123456789ab"),
            (second, "req_77aa01", "9b1d0c2e-aaaa-4bbb-8ccc-0123456789ff"),
        )
    ]
    one, two = (canonicalize(body, config) for body in bodies)
    system_one = one.body["messages"][0]["content"]
    system_two = two.body["messages"][0]["content"]
    stable_one = system_one.split(SEPARATOR + "[Context: ")[0]
    assert stable_one == system_two.split(SEPARATOR + "[Context: ")[0]
    assert "[timestamp]" in stable_one or "[epoch]" in stable_one
    assert "[request_id]" in stable_one
    assert "[uuid]" in stable_one
    assert [f.label for f in one.record.fragments] == [f.label for f in two.record.fragments]
    assert one.record.note_placement is placement


def test_note_placements() -> None:
    body = chat(
        ("system", "Rules."),
        ("developer", "Now: 2026-11-21T14:03:07Z"),
        ("user", "a"),
        ("assistant", "b"),
        ("user", [{"type": "text", "text": "c"}]),
    )
    note = "[Context: [timestamp] = 2026-11-21T14:03:07Z]"
    suffix = canonicalize(body).body["messages"]
    assert suffix[1] == {"role": "developer", "content": "Now: [timestamp]\n\n" + note}
    separate = canonicalize(body, RewriteConfig(note_placement="system_message")).body  # type: ignore[arg-type]
    assert separate["messages"][2] == {"role": "developer", "content": note}
    assert [m["role"] for m in separate["messages"]][3:] == ["user", "assistant", "user"]
    last = canonicalize(body, RewriteConfig(note_placement="last_user_suffix")).body  # type: ignore[arg-type]
    assert last["messages"][4]["content"] == [
        {"type": "text", "text": "c"},
        {"type": "text", "text": note},
    ]
    assert last["messages"][1]["content"] == "Now: [timestamp]"


def test_last_user_placement_without_a_user_falls_back() -> None:
    body = chat(("system", "Now: 2026-11-21"), ("assistant", "hello"))
    result = canonicalize(body, RewriteConfig(note_placement="last_user_suffix"))  # type: ignore[arg-type]
    assert result.record.note_placement is NotePlacement.SYSTEM_SUFFIX
    assert result.body["messages"][0]["content"].endswith("[Context: [timestamp] = 2026-11-21]")


def test_only_the_leading_system_messages_lose_fragments() -> None:
    body = chat(
        ("system", "Today 2026-11-21.\n```\nexample 2020-01-01\n```"),
        ("user", "my order req_123 from 2026-11-01"),
        ("system", "Later: 2026-11-22"),
    )
    result = canonicalize(body)
    messages = result.body["messages"]
    assert messages[0]["content"] == (
        "Today [timestamp].\n```\nexample 2020-01-01\n```\n\n[Context: [timestamp] = 2026-11-21]"
    )
    assert messages[1:] == body["messages"][1:]
    assert [(f.kind, f.message) for f in result.record.fragments] == [("timestamp", 0)]


def test_repeated_kinds_are_numbered() -> None:
    body = chat(("system", "from 2026-11-21 to 2026-11-22, req_1ab and req_2cd"))
    result = canonicalize(body)
    assert result.body["messages"][0]["content"] == (
        "from [timestamp] to [timestamp 2], [request_id] and [request_id 2]\n\n"
        "[Context: [timestamp] = 2026-11-21; [timestamp 2] = 2026-11-22; "
        "[request_id] = req_1ab; [request_id 2] = req_2cd]"
    )


def test_list_content_parts() -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA  \n"}}
    body = chat(
        ("system", [{"type": "text", "text": "Now 2026-11-21  "}, image]),
        ("user", [{"type": "text", "text": "look  \r\n"}, image, {"type": "input_audio"}]),
    )
    result = canonicalize(body)
    system, user = result.body["messages"]
    assert system["content"] == [
        {"type": "text", "text": "Now [timestamp]"},
        image,
        {"type": "text", "text": "[Context: [timestamp] = 2026-11-21]"},
    ]
    assert user is body["messages"][1]  # what the user sent goes as sent
    assert system["content"][1] is image
    opted = canonicalize(body, RewriteConfig(transforms=frozenset({Transform.USER_WHITESPACE})))
    user = opted.body["messages"][1]
    assert user["content"] == [{"type": "text", "text": "look\n"}, image, {"type": "input_audio"}]


# id -> (transforms, contents after the rewrite)
WHITESPACE: dict[str, tuple[frozenset[Transform], list[str]]] = {
    "default: the system prompt only": (frozenset(), ["s", "u  ", "a  ", "t  ", "f  "]),
    "user": (frozenset({Transform.USER_WHITESPACE}), ["s", "u", "a  ", "t  ", "f  "]),
    "assistant": (frozenset({Transform.ASSISTANT_WHITESPACE}), ["s", "u  ", "a", "t  ", "f  "]),
    "tool": (frozenset({Transform.TOOL_WHITESPACE}), ["s", "u  ", "a  ", "t", "f"]),
    "all": (
        frozenset({Transform.USER_WHITESPACE, Transform.ASSISTANT_WHITESPACE}),
        ["s", "u", "a", "t  ", "f  "],
    ),
}


@pytest.mark.parametrize(("transforms", "contents"), WHITESPACE.values(), ids=list(WHITESPACE))
def test_whitespace_only_where_the_policy_opts_in(
    transforms: frozenset[Transform], contents: list[str]
) -> None:
    body = chat(("system", "s  "), ("user", "u  "), ("assistant", "a  "), ("tool", "t  "))
    body["messages"].append({"role": "function", "content": "f  ", "name": "x"})
    result = canonicalize(body, RewriteConfig(transforms=transforms))
    assert [m["content"] for m in result.body["messages"]] == contents
    for before, after in zip(body["messages"], result.body["messages"], strict=True):
        if before["content"] == after["content"]:
            assert after is before  # unchanged messages are shared, not copied
    assert result.record.whitespace_changes == sum(
        a != b["content"] for a, b in zip(contents, body["messages"], strict=True)
    )


def test_messages_without_text_pass_through() -> None:
    body = chat(("assistant", None), ("user", "hi"))
    body["messages"][0]["tool_calls"] = [{"id": "call_1"}]
    every = RewriteConfig(transforms=frozenset(Transform))
    assert canonicalize(body, every).body == body


# id -> (transforms, tool names after, property keys of "zeta" after)
TOOLS: dict[str, tuple[frozenset[Transform], list[str], list[str]]] = {
    "default: as sent": (frozenset(), ["zeta", "alpha"], ["z_last", "a_first"]),
    "tool_order": (frozenset({Transform.TOOL_ORDER}), ["alpha", "zeta"], ["z_last", "a_first"]),
    "tool_schema_key_order": (
        frozenset({Transform.TOOL_SCHEMA_KEY_ORDER}),
        ["zeta", "alpha"],
        ["a_first", "z_last"],
    ),
    "both": (
        frozenset({Transform.TOOL_ORDER, Transform.TOOL_SCHEMA_KEY_ORDER}),
        ["alpha", "zeta"],
        ["a_first", "z_last"],
    ),
}


@pytest.mark.parametrize(("transforms", "names", "keys"), TOOLS.values(), ids=list(TOOLS))
def test_tools_only_where_the_policy_opts_in(
    transforms: frozenset[Transform], names: list[str], keys: list[str]
) -> None:
    zeta = tool("zeta", z_last={"type": "string"}, a_first={"type": "integer"})
    body = chat(("user", "hi"), tools=[zeta, tool("alpha")])
    body.update(temperature=0.2, stream=True, tool_choice={"type": "function"})
    result = canonicalize(body, RewriteConfig(transforms=transforms))
    tools = result.body["tools"]
    assert [t["function"]["name"] for t in tools] == names
    assert list(tools[names.index("zeta")]["function"]["parameters"]["properties"]) == keys
    assert list(result.body) == list(body)
    assert result.body["tool_choice"] is body["tool_choice"]
    if not transforms:
        assert tools is body["tools"]
        assert result.record.summary() == "unchanged"


def test_hoist_system() -> None:
    body = chat(("user", "a"), ("system", "s1"), ("assistant", "b"), ("developer", "s2"))
    result = canonicalize(body, RewriteConfig(hoist_system=True))
    assert [m["content"] for m in result.body["messages"]] == ["s1", "s2", "a", "b"]
    assert result.record.system_hoisted == 2
    assert [m["content"] for m in canonicalize(body).body["messages"]] == ["a", "s1", "b", "s2"]


# id -> (prompt, canonical prompt)
COMPLETIONS: dict[str, tuple[Any, Any]] = {
    "string": ("Q:  \r\n\n\n\nA:  ", "Q:\n\nA:  "),
    "list": (["a  \nb", "c"], ["a\nb", "c"]),
    "tokens": ([1, 2, 3], [1, 2, 3]),
    "no fragments move": ("Now 2026-11-21\n", "Now 2026-11-21\n"),
}


@pytest.mark.parametrize(("prompt", "expected"), COMPLETIONS.values(), ids=list(COMPLETIONS))
def test_completions(prompt: Any, expected: Any) -> None:
    body = {"model": "m", "prompt": prompt, "max_tokens": 5}
    opted = RewriteConfig(transforms=frozenset({Transform.COMPLETIONS_WHITESPACE}))
    result = canonicalize(body, opted)
    assert result.body == {"model": "m", "prompt": expected, "max_tokens": 5}
    assert result.record.fragments == ()
    default = canonicalize(body)
    assert default.body == body
    assert default.body["prompt"] is prompt


def test_input_never_modified_and_record_summary() -> None:
    body = chat(
        ("system", "Now 2026-11-21T14:03:07Z  \n\n\n\nreq_9f9f9f"),
        ("user", [{"type": "text", "text": "x  "}]),
        tools=[tool("b", q={"b": 1, "a": 2}), tool("a")],
    )
    before = copy.deepcopy(body)
    every = RewriteConfig(transforms=frozenset(Transform))
    result = canonicalize(body, every)
    assert body == before
    assert result.body is not body
    assert result.body["messages"] is not body["messages"]
    assert result.record.changed
    assert result.record.kinds == ("timestamp", "request_id")
    assert result.record.summary() == "moved=timestamp,request_id;tools=reordered;whitespace=2"
    assert canonicalize(body).record.summary() == "moved=timestamp,request_id;whitespace=1"
    assert restore(result.body, result.record)[0] == (
        "system",
        "Now 2026-11-21T14:03:07Z\n\nreq_9f9f9f",
    )


def test_bodies_without_prompts_pass_through() -> None:
    body = {"model": "m", "input": "x"}
    result = canonicalize(body)
    assert result.body == body
    assert result.body is not body
    assert not result.record.changed
    assert result.record.summary() == "unchanged"
