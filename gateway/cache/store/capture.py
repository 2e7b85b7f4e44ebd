"""Rebuild a whole answer from what the proxy relays, so it can be stored.

A non-streaming answer is taken as it is. A streamed one is folded back into the object a
non-streaming call would have returned: the content (or text) deltas joined, the last
``finish_reason``, the usage chunk if the client asked for one. Anything the cache must not
replay (several choices, tool calls, an answer that did not end with ``stop``) makes the
capture unstorable; ``eligibility.storable_answer`` has the final word.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gateway.cache.store.eligibility import storable_answer
from gateway.openai.sse import Unread


class AnswerCapture:
    """Collects one exchange's answer; ``finish`` hands it over once the exchange ended well."""

    __slots__ = ("_endpoint", "_fields", "_finish", "_kept", "_on_answer", "_parts", "_role",
                 "_spoilt")  # fmt: skip

    def __init__(self, endpoint: str, on_answer: Callable[[dict[str, Any]], None]) -> None:
        self._endpoint = endpoint
        self._on_answer = on_answer
        self._parts: list[str] = []
        self._fields: dict[str, Any] = {}
        self._finish: str | None = None
        self._role = "assistant"
        self._spoilt = False
        self._kept = Unread()  # events relayed the fast way

    def whole(self, answer: dict[str, Any]) -> None:
        """A non-streaming answer, as relayed."""
        if storable_answer(answer):
            self._on_answer(answer)

    def keep(self, frame: bytes) -> None:
        """One streamed event as relayed without being parsed (``openai/plain_events.py``;
        ``data: `` + JSON + a blank line): read with the next parsed one, or at the end."""
        self._kept.keep(frame)

    def event(self, chunk: dict[str, Any]) -> None:
        """One streamed event, as relayed."""
        if self._kept:
            self._read_kept()
        self._event(chunk)

    def _read_kept(self) -> None:
        for event in self._kept.take():
            self._event(event)

    def _event(self, chunk: dict[str, Any]) -> None:
        if self._spoilt:
            return
        for key in ("id", "created", "system_fingerprint", "usage"):
            if chunk.get(key) is not None:
                self._fields[key] = chunk[key]
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                self._spoilt = True
                return
            self._choice(choice)

    def finish(self) -> None:
        """The stream ended with ``[DONE]`` and no error."""
        self._read_kept()
        if self._spoilt or self._finish is None:
            return
        answer = self._rebuild()
        if storable_answer(answer):
            self._on_answer(answer)

    def _choice(self, choice: dict[str, Any]) -> None:
        if choice.get("finish_reason"):
            self._finish = str(choice["finish_reason"])
        if self._endpoint == "completions":
            text = choice.get("text")
            if isinstance(text, str):
                self._parts.append(text)
            return
        delta = choice.get("delta")
        if not isinstance(delta, dict):
            return
        if delta.get("tool_calls") or delta.get("function_call"):
            self._spoilt = True
        if isinstance(delta.get("role"), str):
            self._role = delta["role"]
        if isinstance(delta.get("content"), str):
            self._parts.append(delta["content"])

    def _rebuild(self) -> dict[str, Any]:
        text = "".join(self._parts)
        choice: dict[str, Any] = {"index": 0, "finish_reason": self._finish}
        if self._endpoint == "completions":
            choice |= {"text": text, "logprobs": None}
            obj = "text_completion"
        else:
            choice |= {"message": {"role": self._role, "content": text}, "logprobs": None}
            obj = "chat.completion"
        answer: dict[str, Any] = {"object": obj, "choices": [choice], **self._fields}
        return answer
