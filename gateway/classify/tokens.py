"""The token-counter interface, and the chat-template overhead shared by every counter.

A chat request costs more tokens than its text: templates wrap each message in role markers
and delimiters (ChatML ``<|im_start|>user\\n ... <|im_end|>\\n`` is 4-5 tokens, Llama 3's
header and ``<|eot_id|>`` about 5) and prime the reply with the assistant header. Parameters
(``ChatOverhead``):

- ``per_message``: tokens added around every message (default 4);
- ``per_name``: extra tokens when a message carries ``name`` (default 1);
- ``reply_priming``: tokens of the assistant header that starts the answer (default 3);
- ``per_media_part``: flat price of a non-text part such as an image (default 85, OpenAI's
  low-detail image price; vision backends vary widely, so set it per deployment).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from gateway.openai.messages import Message, media_parts, message_texts


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens of text and of OpenAI chat messages."""

    @property
    def exact(self) -> bool:
        """True when counts come from the model's real tokenizer, False for estimates."""
        ...

    def count(self, text: str) -> int:
        """Tokens of ``text`` without any special tokens."""
        ...

    def count_messages(self, messages: Sequence[Message]) -> int:
        """Tokens of a whole chat prompt, template overhead included."""
        ...


@dataclass(frozen=True, slots=True)
class ChatOverhead:
    """Template tokens a chat prompt adds on top of its text."""

    per_message: int = 4
    per_name: int = 1
    reply_priming: int = 3
    per_media_part: int = 85

    def __post_init__(self) -> None:
        for name in ("per_message", "per_name", "reply_priming", "per_media_part"):
            if getattr(self, name) < 0:
                raise ValueError(f"ChatOverhead.{name} must be >= 0")


def count_chat(
    count: Callable[[str], int], messages: Sequence[Message], overhead: ChatOverhead
) -> int:
    """Tokens of a chat prompt: each text piece through ``count``, plus template overhead."""
    total = overhead.reply_priming if messages else 0
    for message in messages:
        total += overhead.per_message
        total += overhead.per_media_part * media_parts(message.get("content"))
        if isinstance(message.get("name"), str):
            total += overhead.per_name + count(message["name"])
        for text in message_texts(message):
            total += count(text)
    return total


def count_prompt(counter: TokenCounter, prompt: object) -> int:
    """Tokens of a legacy completions ``prompt``: text, a list of texts, or token ids."""
    if isinstance(prompt, str):
        return counter.count(prompt)
    if not isinstance(prompt, list) or not prompt:
        return 0
    if all(isinstance(item, int) for item in prompt):
        return len(prompt)
    # A batch of prompts: each is served separately, so the longest one must fit.
    return max(count_prompt(counter, item) for item in prompt)
