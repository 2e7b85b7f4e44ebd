"""Property: what users, assistants and tools wrote, completions prompts and tool schemas leave
the rewrite byte for byte, unless the policy names the transform that may touch them.

The rewritten body is serialised as the proxy sends it (orjson, keys in order) and parsed
back before the comparison, so the check is on what goes upstream.
"""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.rewrite import NotePlacement, RewriteConfig, RewriteResult, Transform, canonicalize
from gateway.rewrite.note import is_note, split_note
from gateway.rewrite.tools import tool_name
from tests.support.client_content import as_sent, chat_bodies, completion_bodies

CONFIGS = st.builds(
    RewriteConfig,
    note_placement=st.sampled_from(list(NotePlacement)),
    transforms=st.frozensets(st.sampled_from(list(Transform))),
)
_OPENS = {
    "user": Transform.USER_WHITESPACE,
    "assistant": Transform.ASSISTANT_WHITESPACE,
    "tool": Transform.TOOL_WHITESPACE,
}


def _forwarded(result: RewriteResult) -> dict[str, Any]:
    body = dict(result.body)
    body["model"] = "served-name"  # what the proxy changes
    parsed: dict[str, Any] = orjson.loads(orjson.dumps(body))
    return parsed


def _turns(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m.get("role") not in ("system", "developer")]


@settings(max_examples=300, deadline=None)
@given(chat_bodies(), CONFIGS)
def test_chat_fields_stay_byte_identical(body: dict[str, Any], config: RewriteConfig) -> None:
    result = canonicalize(body, config)
    sent = _forwarded(result)
    noted_user = _noted_user(body, result)
    for index, (before, after) in enumerate(zip(_turns(body), _turns(sent), strict=True)):
        if _OPENS[before["role"]] in config.transforms:
            continue
        if index == noted_user:
            _assert_note_appended(before, after)
        else:
            assert as_sent(after) == as_sent(before)
    _assert_tools(body.get("tools"), sent.get("tools"), config.transforms)
    for key, value in body.items():
        if key not in ("model", "messages", "tools"):
            assert as_sent(sent[key]) == as_sent(value)


@settings(max_examples=200, deadline=None)
@given(completion_bodies(), CONFIGS)
def test_completion_prompts_stay_byte_identical(
    body: dict[str, Any], config: RewriteConfig
) -> None:
    sent = _forwarded(canonicalize(body, config))
    if Transform.COMPLETIONS_WHITESPACE not in config.transforms:
        assert as_sent(sent["prompt"]) == as_sent(body["prompt"])
    assert sent["max_tokens"] == body["max_tokens"]


def _noted_user(body: dict[str, Any], result: RewriteResult) -> int | None:
    """The index among the turns of the user message that carries the note, if one does."""
    if result.record.note_placement is not NotePlacement.LAST_USER_SUFFIX:
        return None
    users = [i for i, m in enumerate(_turns(body)) if m["role"] == "user"]
    return users[-1]


def _assert_note_appended(before: dict[str, Any], after: dict[str, Any]) -> None:
    """The one opt-in change to a user turn: the note after the user's unchanged text."""
    assert {k: v for k, v in after.items() if k != "content"} == {
        k: v for k, v in before.items() if k != "content"
    }
    original, content = before["content"], after["content"]
    if isinstance(original, list):
        assert as_sent(content[:-1]) == as_sent(original)
        assert is_note(content[-1]["text"])
        return
    split = split_note(content)
    assert split is not None
    assert content.startswith(original)
    assert content[len(original) :].endswith(split[1])


def _assert_tools(before: Any, after: Any, transforms: frozenset[Transform]) -> None:
    order = Transform.TOOL_ORDER in transforms
    keys = Transform.TOOL_SCHEMA_KEY_ORDER in transforms
    if before is None or (order and keys):
        return
    if not (order or keys):
        assert as_sent(after) == as_sent(before)
    elif order:  # each tool's schema as sent, only the list order may change
        assert sorted(as_sent(t) for t in after) == sorted(as_sent(t) for t in before)
    else:  # keys sorted inside, the list order as sent
        assert [tool_name(t) for t in after] == [tool_name(t) for t in before]
