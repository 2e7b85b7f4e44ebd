"""Chat token counting: text pieces, template overhead, parts, tools, legacy prompts."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.classify.estimate import EstimateCounter
from gateway.classify.tokens import ChatOverhead, TokenCounter, count_chat, count_prompt
from gateway.openai.messages import (
    chat_shape,
    media_parts,
    message_texts,
    requested_max_tokens,
    text_parts,
)

NO_OVERHEAD = ChatOverhead(per_message=0, per_name=0, reply_priming=0, per_media_part=0)


def words(text: str) -> int:
    return len(text.split())


class WordCounter:
    exact = True

    def count(self, text: str) -> int:
        return words(text)

    def count_messages(self, messages: Any) -> int:
        return count_chat(words, messages, ChatOverhead())


def test_overhead_per_message_and_reply() -> None:
    messages = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hello there friend"},
    ]
    assert count_chat(words, messages, NO_OVERHEAD) == 5
    assert count_chat(words, messages, ChatOverhead()) == 5 + 2 * 4 + 3


def test_no_messages_cost_nothing() -> None:
    assert count_chat(words, [], ChatOverhead()) == 0


def test_list_of_parts_counts_text_and_prices_media() -> None:
    content = [
        {"type": "text", "text": "what is in"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        {"type": "text", "text": "this picture"},
    ]
    messages = [{"role": "user", "content": content}]
    overhead = ChatOverhead(per_message=0, reply_priming=0, per_media_part=85)
    assert count_chat(words, messages, overhead) == 5 + 85
    assert list(text_parts(content)) == ["what is in", "this picture"]
    assert media_parts(content) == 1


def test_names_and_tool_calls_are_counted() -> None:
    message = {
        "role": "assistant",
        "name": "helper",
        "content": None,
        "tool_calls": [
            {
                "id": "1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
            }
        ],
    }
    assert list(message_texts(message)) == ["get_weather", '{"city": "Oslo"}']
    overhead = ChatOverhead(per_message=0, per_name=1, reply_priming=0)
    assert count_chat(words, [message], overhead) == 1 + 1 + 1 + 2


@pytest.mark.parametrize("content", [None, 42, [1, "x", {"type": "text"}], {"text": "x"}])
def test_odd_content_does_not_raise(content: object) -> None:
    assert count_chat(words, [{"role": "user", "content": content}], NO_OVERHEAD) == 0


def test_chat_shape_finds_the_last_user_message() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "ok"},
        {
            "role": "user",
            "content": [{"type": "text", "text": "second"}, {"type": "text", "text": "part"}],
        },
    ]
    shape = chat_shape(messages)
    assert (shape.messages, shape.user_turns, shape.ask) == (4, 2, "second\npart")


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({}, None),
        ({"max_tokens": 100}, 100),
        ({"max_completion_tokens": 50, "max_tokens": 100}, 50),
        ({"max_tokens": True}, None),
        ({"max_tokens": 0}, None),
    ],
)
def test_requested_max_tokens(body: dict[str, Any], expected: int | None) -> None:
    assert requested_max_tokens(body) == expected


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("one two three", 3),
        ([1, 2, 3, 4], 4),
        (["a b", "c d e"], 3),
        ([[1, 2], [3, 4, 5, 6]], 4),
        ([], 0),
        (None, 0),
    ],
)
def test_count_prompt(prompt: object, expected: int) -> None:
    assert count_prompt(WordCounter(), prompt) == expected


def test_counters_satisfy_the_protocol() -> None:
    assert isinstance(EstimateCounter(), TokenCounter)
    assert isinstance(WordCounter(), TokenCounter)


def test_overhead_is_validated() -> None:
    with pytest.raises(ValueError, match="per_message"):
        ChatOverhead(per_message=-1)
