"""Exact token counts from a Hugging Face ``tokenizer.json``, and the counter factory.

``TokenizerJsonCounter`` loads the file with the ``tokenizers`` library (Rust, releases the
GIL) and counts ``encode(text, add_special_tokens=False)`` ids; the chat template's tokens
come from ``ChatOverhead`` as for the estimate, since templates live in
``tokenizer_config.json``, not in ``tokenizer.json``. ``tokenizers`` is imported only when a
file is configured, so a gateway without it still runs on the estimate.

``load_token_counter(path)`` is what the gateway calls: the file's counter when a path is
given, ``EstimateCounter`` otherwise. Loading reads and parses the file (~0.3 s for
DeepSeek-V3's 128k vocabulary): do it when the policy is compiled, not per request.

Exact counts are costly: ~1.4 ms per 1,000 tokens with that tokenizer, 50 times the
estimate. Classify with the estimate and count exactly only to settle a context check that
the estimate leaves uncertain (``ContextFit.certain``), off the event loop if it can be long.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from gateway.classify.estimate import EstimateCounter
from gateway.classify.tokens import ChatOverhead, TokenCounter, count_chat
from gateway.openai.messages import Message


class TokenizerUnavailable(RuntimeError):
    """The tokenizer file cannot be used (library missing, file unreadable or invalid)."""


class _Encoding(Protocol):
    @property
    def ids(self) -> list[int]: ...


class _Tokenizer(Protocol):
    def encode(self, sequence: str, *, add_special_tokens: bool = ...) -> _Encoding: ...


@dataclass(frozen=True, slots=True)
class TokenizerJsonCounter:
    """``TokenCounter`` backed by a real tokenizer."""

    tokenizer: _Tokenizer
    overhead: ChatOverhead = field(default_factory=ChatOverhead)

    @property
    def exact(self) -> bool:
        return True

    def count(self, text: str) -> int:
        if not text:
            return 0
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def count_messages(self, messages: Sequence[Message]) -> int:
        return count_chat(self.count, messages, self.overhead)


def read_tokenizer(path: str | Path) -> _Tokenizer:
    """Load a ``tokenizer.json``; raise ``TokenizerUnavailable`` with the reason."""
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:  # the gateway runs without it; only this feature needs it
        raise TokenizerUnavailable(
            "counting with a tokenizer.json needs the 'tokenizers' package"
        ) from exc
    try:
        tokenizer: _Tokenizer = Tokenizer.from_file(str(path))
    except Exception as exc:  # tokenizers raises plain Exception for bad JSON or models
        raise TokenizerUnavailable(f"cannot load tokenizer file {path}: {exc}") from exc
    return tokenizer


def load_token_counter(
    path: str | Path | None, overhead: ChatOverhead | None = None
) -> TokenCounter:
    """The exact counter for ``path``, or the estimate when no path is configured."""
    overhead = overhead or ChatOverhead()
    if path is None:
        return EstimateCounter(overhead=overhead)
    return TokenizerJsonCounter(read_tokenizer(path), overhead)
