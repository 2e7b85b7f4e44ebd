"""Reading OpenAI chat messages: the text a model sees, and the shape of the conversation.

Messages are the raw JSON objects of the request body (``body["messages"]``), already checked
by ``openai_api``: ``content`` is a string, a list of parts, or null. Text parts count as text;
any other part (image, audio, file) counts as one media part, which token counters price at a
flat rate. Assistant ``tool_calls`` contribute their function names and argument strings,
since chat templates render them into the prompt.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gateway.openai.numbers import whole_number

# Output tokens assumed for a request that sets no max_tokens (admission's cost).
DEFAULT_OUTPUT_TOKENS = 256

Message = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ChatShape:
    """How a conversation is built, for the difficulty features."""

    messages: int
    user_turns: int
    ask: str  # text of the last user message: what is being asked now


def text_parts(content: object) -> Iterator[str]:
    """The text pieces of one ``content`` value (string, list of parts, or None)."""
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                yield part["text"]


def media_parts(content: object) -> int:
    """How many non-text parts (images, audio, files) one ``content`` value holds."""
    if not isinstance(content, list):
        return 0
    return sum(1 for part in content if isinstance(part, Mapping) and "text" not in part)


def message_texts(message: Message) -> Iterator[str]:
    """Every piece of text of one message that a chat template renders into the prompt."""
    yield from text_parts(message.get("content"))
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        for call in calls:
            function = call.get("function") if isinstance(call, Mapping) else None
            if isinstance(function, Mapping):
                for key in ("name", "arguments"):
                    if isinstance(function.get(key), str):
                        yield function[key]


def chat_shape(messages: Sequence[Message]) -> ChatShape:
    """Count the turns and find the last user message."""
    user_turns = 0
    ask = ""
    for message in messages:
        if message.get("role") == "user":
            user_turns += 1
            ask = "\n".join(text_parts(message.get("content")))
    return ChatShape(messages=len(messages), user_turns=user_turns, ask=ask)


def requested_max_tokens(body: Mapping[str, Any]) -> int | None:
    """The client's completion budget: ``max_completion_tokens``, else ``max_tokens`` (the
    Responses API's ``max_output_tokens``)."""
    for key in ("max_completion_tokens", "max_tokens", "max_output_tokens"):
        value = whole_number(body.get(key))
        if value is not None and value > 0:
            return value
    return None


def expected_output_tokens(body: Mapping[str, Any], *, generates: bool = True) -> int:
    """Output tokens to expect: the client's budget, else ``DEFAULT_OUTPUT_TOKENS``; none for
    a request that generates nothing (embeddings, tokenize, rerank, score)."""
    if not generates:
        return 0
    return requested_max_tokens(body) or DEFAULT_OUTPUT_TOKENS


def responses_messages(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A Responses API request's ``instructions`` and ``input`` as chat messages: the text a
    model sees (an item without a role, such as a tool's output, counts as user text)."""
    out: list[dict[str, Any]] = []
    instructions = body.get("instructions")
    if isinstance(instructions, str) and instructions:
        out.append({"role": "system", "content": instructions})
    items = body.get("input")
    if isinstance(items, str):
        return [*out, {"role": "user", "content": items}]
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, Mapping):
            continue
        role = item.get("role")
        content = item.get("content", item.get("output"))
        out.append(
            {
                "role": role if isinstance(role, str) else "user",
                "content": content if isinstance(content, str | list) else None,
            }
        )
    return out


def prompt_chars(body: Mapping[str, Any]) -> int:
    if "messages" in body:
        return sum(len(text) for m in body["messages"] for text in message_texts(m))
    if "input" in body:  # embeddings, Responses API
        instructions = body.get("instructions")
        return _input_chars(body["input"]) + (
            len(instructions) if isinstance(instructions, str) else 0
        )
    prompt = body.get("prompt")
    if isinstance(prompt, str):
        return len(prompt)
    if isinstance(prompt, list):
        # Token ids count as about four characters each.
        return sum(len(p) if isinstance(p, str) else 4 for p in prompt)
    return 0


def _input_chars(value: object) -> int:
    """Characters of an ``input``: embeddings' text, texts or token ids, or the Responses
    API's text or items; a token id counts as about four characters."""
    if isinstance(value, str):
        return len(value)
    if whole_number(value) is not None:
        return 4
    if isinstance(value, list):
        return sum(_input_chars(item) for item in value)
    if isinstance(value, Mapping):
        return sum(len(text) for text in message_texts(value)) + _input_chars(value.get("output"))
    return 0
