"""A word-count token counter and conversation builders for the compression tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gateway.classify.tokens import ChatOverhead, count_chat
from gateway.openai.messages import Message


class WordCounter:
    """One token per whitespace-separated word, with the usual chat template overhead."""

    exact = True

    def count(self, text: str) -> int:
        return len(text.split())

    def count_messages(self, messages: Sequence[Message]) -> int:
        return count_chat(self.count, messages, ChatOverhead())


def msg(role: str, content: str, **extra: Any) -> dict[str, Any]:
    return {"role": role, "content": content, **extra}


def words(n: int, tag: str) -> str:
    return " ".join(f"{tag}{i}" for i in range(n))


def conversation(turns: int, size: int = 20, system: str = "You are helpful.") -> list[Message]:
    """A system prompt, then ``turns`` user/assistant turns of ``size`` words each message."""
    out: list[Message] = [msg("system", system)]
    for t in range(turns):
        out.append(msg("user", words(size, f"u{t}_")))
        out.append(msg("assistant", words(size, f"a{t}_")))
    return out


def tool_turn(t: int, size: int) -> list[Message]:
    """A user message, an assistant tool call, its result, and the final answer."""
    call = {"id": f"call_{t}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    return [
        msg("user", words(size, f"u{t}_")),
        {"role": "assistant", "content": None, "tool_calls": [call]},
        msg("tool", words(size, f"r{t}_"), tool_call_id=f"call_{t}"),
        msg("assistant", words(size, f"a{t}_")),
    ]
