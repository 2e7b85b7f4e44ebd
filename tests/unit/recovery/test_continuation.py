"""A stream cut short, continued: the bodies asked of another replica, and the bookkeeping of
what was relayed (ids, text, tokens), by table."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.recovery.continuation import (
    CONTINUE_FINAL,
    NONE,
    PREFILL,
    Cut,
    Relayed,
    chat_cut,
    continuation_body,
    first_token_wait_s,
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


# The client's fields an engine reads beyond the OpenAI API (llama.cpp's), and sampling.
ENGINE_FIELDS = {"cache_prompt": False, "ignore_eos": True, "temperature": 0, "seed": 0}
MARKED = {"continue_final_message": True, "add_generation_prompt": False}

# how -> the fields the continuation adds to the client's body besides messages, max_tokens
CHAT_CONTINUES: dict[str, tuple[str, dict[str, Any]]] = {
    "vLLM, SGLang: continue the final message": (CONTINUE_FINAL, MARKED),
    # Unmarked, llama.cpp's server streams the prefilled text again before the rest.
    "llama.cpp: a prefill marked as the message to continue": (PREFILL, MARKED),
}


@pytest.mark.parametrize(("how", "added"), CHAT_CONTINUES.values(), ids=CHAT_CONTINUES.keys())
def test_a_chat_continues_its_last_assistant_message(how: str, added: dict[str, Any]) -> None:
    client = {**CHAT, "max_tokens": 10, **ENGINE_FIELDS}
    body = continuation_body("chat", client, _relayed("one", " two"), how)
    assert body is not None
    assert body["messages"] == [*CHAT["messages"], {"role": "assistant", "content": "one two"}]
    assert body["max_tokens"] == 8  # two already relayed
    rest = {k: v for k, v in body.items() if k not in ("messages", "max_tokens")}
    assert rest == {k: v for k, v in client.items() if k not in ("messages", "max_tokens")} | added
    assert CHAT["messages"] == [{"role": "user", "content": "Count."}]  # the client's, untouched


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


# (relayed pieces) -> (the partial sent, the whitespace owed, the relayed tokens only that)
CUTS: dict[str, tuple[list[str], str, str, int]] = {
    "no whitespace at the end": (["one", " two"], "one two", "", 0),
    "a token of only whitespace": (["a", " "], "a", " ", 1),
    "a line's end, then a space": (["world", ".", "\n", " "], "world.", "\n ", 2),
    "whitespace inside the last token": (["world.\n"], "world.", "\n", 0),
    "only whitespace: sent as it is": (["\n"], "\n", "", 0),
}  # fmt: skip


@pytest.mark.parametrize(("pieces", "sent", "owed", "tokens"), CUTS.values(), ids=CUTS.keys())
def test_a_chat_partial_is_sent_without_its_final_whitespace(
    pieces: list[str], sent: str, owed: str, tokens: int
) -> None:
    # Chat templates trim a message (Gemma's, Llama 3's): sent with its final whitespace,
    # the engine would continue after the trimmed text and write that whitespace twice.
    relayed = _relayed(*pieces)
    assert chat_cut(relayed) == Cut(sent, owed, tokens)
    body = continuation_body("chat", {**CHAT, "max_tokens": 10}, relayed, CONTINUE_FINAL)
    assert body is not None
    assert body["messages"][-1]["content"] == sent
    assert body["max_tokens"] == 10 - len(pieces) + tokens  # written again: paid again


def test_completions_keep_the_whole_text() -> None:
    relayed = Relayed()
    relayed.see({"id": "cmpl-1", "choices": [{"text": " and "}]})
    body = continuation_body("completions", {"prompt": "Salt", "stream": True}, relayed, NONE)
    assert body is not None
    assert body["prompt"] == "Salt and "


def _delta(text: str, finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}]}


# (owed, the continuation's first texts) -> (what is relayed of each, kept or dropped)
SETTLES: dict[str, tuple[str, list[dict[str, Any]], list[tuple[str, bool]]]] = {
    "written again in one token: dropped": (
        " ", [_delta(" "), _delta("3")], [("", False), ("3", True)]),
    "written again with more text": ("\n", [_delta("\nThe")], [("The", True)]),
    "written again over two tokens": (
        "\n ", [_delta("\n"), _delta(" "), _delta("x")], [("", False), ("", False), ("x", True)]),
    "the engine went its own way": (
        "\n", [_delta("The"), _delta("\n")], [("The", True), ("\n", True)]),
    "a last token keeps its finish reason": (" ", [_delta(" ", "length")], [("", True)]),
    "nothing owed": ("", [_delta(" ")], [(" ", True)]),
}  # fmt: skip


@pytest.mark.parametrize(("owed", "events", "relayed"), SETTLES.values(), ids=SETTLES.keys())
def test_whitespace_written_again_is_relayed_once(
    owed: str, events: list[dict[str, Any]], relayed: list[tuple[str, bool]]
) -> None:
    state = Relayed(owed=owed)
    seen = []
    for event in events:
        keep = state.settle(event)
        seen.append((event["choices"][0]["delta"]["content"], keep))
    assert seen == relayed


# (first_token_s, left of total_s) -> how long a continuation waits for its first token: as
# a fresh request would, not the stall limit (a real llama.cpp server continuing its killed
# peer's stream answered past its 0.83 s stall limit)
WAITS: dict[str, tuple[float, float, float]] = {
    "a fresh request's patience": (120.0, 290.0, 120.0),
    "within what is left of the total": (120.0, 30.0, 30.0),
    "nothing left": (120.0, -1.0, 0.0),
}


@pytest.mark.parametrize(("first_token_s", "left_s", "wait_s"), WAITS.values(), ids=WAITS.keys())
def test_how_long_a_continuation_waits(first_token_s: float, left_s: float, wait_s: float) -> None:
    assert first_token_wait_s(first_token_s, left_s) == wait_s
