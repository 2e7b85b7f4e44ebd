"""A stream cut short, continued: the bodies asked of another replica, and the bookkeeping of
what was relayed (ids, text, tokens), by table."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.recovery.continuation import (
    CONTINUE_FINAL,
    NONE,
    PREFILL,
    Relayed,
    continuation_body,
)

CHAT = {"model": "m", "messages": [{"role": "user", "content": "Count."}], "stream": True}


def _relayed(*texts: str) -> Relayed:
    relayed = Relayed()
    relayed.see({"id": "chatcmpl-1", "created": 7, "choices": [{"delta": {"role": "assistant"}}]})
    for text in texts:
        relayed.see({"id": "chatcmpl-1", "choices": [{"delta": {"content": text}}]})
    return relayed


def test_what_was_relayed() -> None:
    relayed = _relayed("one", " two")
    assert (relayed.so_far, relayed.completion_tokens) == ("one two", 2)
    event: dict[str, Any] = {"id": "chatcmpl-9", "created": 99, "choices": []}
    relayed.restamp(event)
    assert (event["id"], event["created"]) == ("chatcmpl-1", 7)


def test_vllm_continues_the_final_message() -> None:
    body = continuation_body(
        "chat", {**CHAT, "max_tokens": 10}, _relayed("one", " two"), CONTINUE_FINAL
    )
    assert body is not None
    assert body["messages"][-1] == {"role": "assistant", "content": "one two"}
    assert (body["continue_final_message"], body["add_generation_prompt"]) == (True, False)
    assert body["max_tokens"] == 8  # two already relayed
    assert CHAT["messages"] == [{"role": "user", "content": "Count."}]  # the client's, untouched


def test_llamacpp_continues_an_assistant_prefill() -> None:
    body = continuation_body("chat", CHAT, _relayed("one"), PREFILL)
    assert body is not None
    assert body["messages"][-1] == {"role": "assistant", "content": "one"}
    assert "continue_final_message" not in body


def test_completions_continue_the_prompt_with_the_text_so_far() -> None:
    relayed = Relayed()
    relayed.see({"id": "cmpl-1", "choices": [{"text": " and"}]})
    body = continuation_body("completions", {"prompt": "Salt", "stream": True}, relayed, NONE)
    assert body is not None
    assert body["prompt"] == "Salt and"


def _tool_call() -> Relayed:
    relayed = _relayed("calling")
    relayed.see({"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "t"}]}}]})
    return relayed


# (endpoint, body, relayed, how) -> no continuation
CANNOT: dict[str, tuple[str, dict[str, Any], Relayed, str]] = {
    "the engine cannot": ("chat", CHAT, _relayed("one"), NONE),
    "a tool call had started": ("chat", CHAT, _tool_call(), CONTINUE_FINAL),
    "nothing relayed yet (a retry, not a continuation)": ("chat", CHAT, _relayed(), CONTINUE_FINAL),
    "several choices": ("chat", {**CHAT, "n": 2}, _relayed("one"), CONTINUE_FINAL),
    "log probabilities asked": (
        "chat", {**CHAT, "logprobs": True}, _relayed("one"), CONTINUE_FINAL),
    "all the tokens it asked for were relayed": (
        "chat", {**CHAT, "max_tokens": 2}, _relayed("one", " two"), CONTINUE_FINAL),
    "the Responses API": ("responses", CHAT, _relayed("one"), CONTINUE_FINAL),
}  # fmt: skip


@pytest.mark.parametrize(("endpoint", "body", "relayed", "how"), CANNOT.values(), ids=CANNOT.keys())
def test_what_cannot_be_continued(
    endpoint: str, body: dict[str, Any], relayed: Relayed, how: str
) -> None:
    assert continuation_body(endpoint, body, relayed, how) is None
