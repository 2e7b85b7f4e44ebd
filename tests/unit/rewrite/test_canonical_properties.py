"""Properties: nothing is lost, turns keep their order, and rewriting twice is a no-op."""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.rewrite import NotePlacement, RewriteConfig, canonicalize
from tests.unit.rewrite.helpers import restore, texts, words

FRAGMENTS = [
    "2026-11-21T14:03:07Z",
    "Sat, 21 Nov 2026 14:03:07 +0000",
    "2026-11-21 14:03:07",
    "Nov 21, 2026",
    "time: 1795298300",
    "3f2a1c4e-1b2c-4d5e-8f90-0123456789ab",
    "req_8f3a2b",
    "request-id: 7f3a9",
]
PIECES = [
    *FRAGMENTS,
    "hello",
    "world",
    "1.",
    "v2",
    " ",
    "  ",
    "\t",
    "\n",
    "\r\n",
    "\n\n\n",
    "```",
    "~~~",
    "é",
    "😀",
]
TEXT = st.lists(st.sampled_from(PIECES), max_size=16).map("".join)
PART = st.one_of(
    TEXT.map(lambda t: {"type": "text", "text": t}),
    st.just({"type": "image_url", "image_url": {"url": "https://x/y.png"}}),
)
CONTENT = st.one_of(TEXT, st.lists(PART, max_size=3))
CONFIGS = st.builds(
    RewriteConfig,
    note_placement=st.sampled_from(list(NotePlacement)),
    hoist_system=st.booleans(),
)


@st.composite
def bodies(draw: st.DrawFn) -> dict[str, Any]:
    head = draw(st.lists(st.sampled_from(["system", "developer"]), max_size=2))
    turns = draw(st.lists(st.sampled_from(["user", "assistant", "tool", "system"]), max_size=6))
    messages = [{"role": role, "content": draw(CONTENT)} for role in head + turns]
    return {"model": "m", "messages": messages}


def _turns(messages: list[tuple[str, Any]]) -> list[tuple[str, list[str]]]:
    return [
        (role, [w for t in texts(content) for w in t.split()])
        for role, content in messages
        if role not in ("system", "developer")
    ]


@settings(max_examples=200, deadline=None)
@given(bodies(), CONFIGS)
def test_content_survives_and_turns_keep_order(body: dict[str, Any], config: RewriteConfig) -> None:
    before = copy.deepcopy(body)
    result = canonicalize(body, config)
    assert body == before
    original = [(m["role"], m["content"]) for m in body["messages"]]
    restored = restore(result.body, result.record)
    assert Counter(words(restored)) == Counter(words(original))
    assert _turns(restored) == _turns(original)
    if not config.hoist_system:
        assert words(restored) == words(original)


@settings(max_examples=200, deadline=None)
@given(bodies(), CONFIGS)
def test_rewriting_twice_changes_nothing_more(body: dict[str, Any], config: RewriteConfig) -> None:
    once = canonicalize(body, config)
    twice = canonicalize(once.body, config)
    assert twice.body == once.body
    assert not twice.record.changed
