"""Continue a stream cut short: the request re-issued with the text relayed so far.

When a replica dies, or stalls past the idle limit, after some of a streamed answer reached
the client, another replica of the pool serving the same model is asked to go on from where
the answer stopped:

- chat, ``continue_final_message`` (vLLM, SGLang): the messages plus an assistant message
  holding the text so far, with ``continue_final_message: true`` and
  ``add_generation_prompt: false``: the engine continues that message;
- chat, ``assistant_prefill`` (llama.cpp's server): the messages plus the partial assistant
  message, which the server continues as a prefill, marked the same way: without
  ``continue_final_message``, llama.cpp's server (the build ``tests/real`` runs) still
  continues a trailing assistant message, but streams its text again before the rest, which
  the client would then see twice (tests/real/test_llamacpp_continuation.py);
- completions: the prompt plus the text so far (any engine that completes text).

A chat partial that ends in whitespace is sent without it (``Cut``): chat templates commonly
trim a message (Gemma's and Llama 3's ``| trim``), so the engine would continue after the
trimmed text and write the whitespace a second time ("a  3-dimensional"). Sent trimmed, the
engine writes that whitespace again as its first tokens, and the relay drops what was
already relayed (``Relayed.settle``); were the engine to go another way, the rest is
relayed as it comes.

``max_tokens`` (and ``max_completion_tokens``) shrink by the tokens already relayed (less
those that held only the whitespace written again); every other field of the client's body
goes as sent, an engine's own included (llama.cpp's ``cache_prompt``: whether the engine may
reuse its prompt cache, which changes its arithmetic, stays the client's choice, the same
for both attempts). Nothing is continued once a tool-call delta or anything but text was
relayed (a partial tool call cannot be resumed as text), for several choices (``n`` > 1),
with log probabilities, or on any other endpoint (the Responses API's typed events): then
the stream ends with an error event and no ``[DONE]``.

The continuation's first token is awaited as a fresh request's would be: up to the pool's
``first_token_s``, within what is left of its ``total_s`` (``first_token_wait_s``). Not up
to the stall limit (``hedging.stall_limit_s``, a few times the predicted first token): that
is when a first token is moved to another replica with a free slot, while a continuation
given up ends the stream. A real llama.cpp server asked to continue right after its peer
died (tests/real/test_llamacpp_continuation.py) sent its first token after the 0.83 s stall
limit of its prior prediction.

``Relayed`` is the bookkeeping: the text and completion tokens relayed so far, and the
stream's own id, creation time and model, which every event of a continuation is rewritten
to, so the client sees one stream. Usage is summed: the first attempt's prompt tokens, the
completion tokens of all attempts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gateway.openai.sse import Unread

# A backend's way to continue (``BackendSpec.continue_with``, resolved by the policy).
NONE = "none"
CONTINUE_FINAL = "continue_final_message"
PREFILL = "assistant_prefill"


@dataclass(slots=True)
class Relayed:
    """What a stream has relayed so far, across its attempts. Events relayed the fast way
    (``openai/plain_events.py``) are kept as they were sent (``keep``) and read only when
    something asks what was relayed (``so_far``, ``completion_tokens``...): a stream that is
    never continued never parses them."""

    _text: list[str] = field(default_factory=list, init=False)
    _completion_tokens: int = field(default=0, init=False)
    _stream_id: str | None = field(default=None, init=False)
    _created: int | None = field(default=None, init=False)
    _other_than_text: bool = field(default=False, init=False)
    _kept: Unread = field(default_factory=Unread, init=False)
    prompt_tokens: int | None = None  # the first attempt's
    model: str | None = None
    continuations: int = 0
    # Whitespace relayed that the continuation being relayed will write again (``Cut``),
    # and the relayed tokens that held only it.
    owed: str = ""
    owed_tokens: int = 0

    @property
    def text(self) -> list[str]:
        self._read_kept()
        return self._text

    @property
    def completion_tokens(self) -> int:
        """Counted in events, or from an attempt's usage."""
        self._read_kept()
        return self._completion_tokens

    @property
    def stream_id(self) -> str | None:
        self._read_kept()
        return self._stream_id

    @property
    def created(self) -> int | None:
        self._read_kept()
        return self._created

    @property
    def other_than_text(self) -> bool:
        """A tool call, a refusal, log probabilities... was relayed."""
        self._read_kept()
        return self._other_than_text

    @property
    def so_far(self) -> str:
        return "".join(self.text)

    def keep(self, frame: bytes) -> None:
        """Note one relayed chat or completion chunk, as its frame (``data: `` + JSON + a
        blank line), read only when asked."""
        self._kept.keep(frame)

    def see(self, event: dict[str, Any]) -> None:
        """Note one relayed chat or completion chunk."""
        self._read_kept()
        self._see(event)

    def _read_kept(self) -> None:
        if self._kept:
            for event in self._kept.take():
                self._see(event)

    def _see(self, event: dict[str, Any]) -> None:
        self._stream_id = self._stream_id or event.get("id")
        self._created = self._created or event.get("created")
        choices = event.get("choices") or []
        for choice in choices:
            if not isinstance(choice, dict):
                continue
            text = _text_of(choice)
            if text:
                self._text.append(text)
                self._completion_tokens += 1
            if _carries_more_than_text(choice):
                self._other_than_text = True

    def owe(self, cut: Cut) -> None:
        """A continuation from ``cut`` is sent: its first whitespace was relayed already."""
        self.owed, self.owed_tokens = cut.owed, cut.tokens

    def settle(self, event: dict[str, Any]) -> bool:
        """Drop from a continuation's chunk the whitespace already relayed (``owe``); False
        when nothing is left of the chunk to relay."""
        choices = event.get("choices")
        if not self.owed or not isinstance(choices, list) or len(choices) != 1:
            return True
        choice = choices[0]
        delta = choice.get("delta") if isinstance(choice, dict) else None
        text = delta.get("content") if isinstance(delta, dict) else None
        if not isinstance(delta, dict) or not isinstance(text, str) or not text:
            return True
        same = 0
        while same < min(len(text), len(self.owed)) and text[same] == self.owed[same]:
            same += 1
        # Written again as relayed: dropped. Anything else: the engine went its own way.
        self.owed = self.owed[same:] if same == len(text) else ""
        delta["content"] = text[same:]
        if delta["content"] or len(delta) > 1 or choice.get("finish_reason") is not None:
            return True
        return event.get("usage") is not None

    def restamp(self, event: dict[str, Any]) -> None:
        """A continuation's event, made one of the first attempt's stream."""
        stream_id, created = self.stream_id, self.created
        if stream_id is not None:
            event["id"] = stream_id
        if created is not None:
            event["created"] = created


@dataclass(frozen=True, slots=True)
class Cut:
    """Where a chat continuation picks up: the partial message sent, the whitespace relayed
    after it (which the engine writes again), and the relayed tokens that held only it."""

    sent: str
    owed: str = ""
    tokens: int = 0


def chat_cut(relayed: Relayed) -> Cut:
    """The cut of ``relayed``'s text (all of it when it is only whitespace)."""
    partial = relayed.so_far
    sent = partial.rstrip()
    if not sent:
        return Cut(partial)
    pieces = relayed.text
    blank = 0
    while blank < len(pieces) and not pieces[-1 - blank].strip():
        blank += 1
    return Cut(sent, partial[len(sent) :], blank)


def continuation_body(
    endpoint: str, body: dict[str, Any], relayed: Relayed, how: str
) -> dict[str, Any] | None:
    """The body to ask another replica for the rest, or None when it cannot continue."""
    if relayed.other_than_text or not relayed.text or _choices(body) > 1 or body.get("logprobs"):
        return None
    chat = endpoint == "chat"
    cut = chat_cut(relayed) if chat else Cut(relayed.so_far)
    out = {k: v for k, v in body.items()}
    for key in ("max_tokens", "max_completion_tokens"):
        limit = out.get(key)
        if isinstance(limit, int) and not isinstance(limit, bool):
            left = limit - relayed.completion_tokens
            if left < 1:
                return None  # it had all it asked for: nothing to continue
            out[key] = left + cut.tokens
    if endpoint == "completions" and isinstance(body.get("prompt"), str):
        out["prompt"] = body["prompt"] + cut.sent
        return out
    if not chat or how == NONE:
        return None
    messages = list(body.get("messages") or [])
    messages.append({"role": "assistant", "content": cut.sent})
    out["messages"] = messages
    if how in (CONTINUE_FINAL, PREFILL):
        out["continue_final_message"] = True
        out["add_generation_prompt"] = False
    return out


def first_token_wait_s(first_token_s: float, left_s: float) -> float:
    """How long a continuation waits for its first token (``left_s``: of the request's
    ``total_s``)."""
    return max(0.0, min(first_token_s, left_s))


def _choices(body: dict[str, Any]) -> int:
    n = body.get("n", 1)
    return n if isinstance(n, int) and not isinstance(n, bool) else 1


def _text_of(choice: dict[str, Any]) -> str:
    delta = choice.get("delta")
    if isinstance(delta, dict):
        content = delta.get("content")
        return content if isinstance(content, str) else ""
    text = choice.get("text")  # completions
    return text if isinstance(text, str) else ""


def _carries_more_than_text(choice: dict[str, Any]) -> bool:
    delta = choice.get("delta")
    if isinstance(delta, dict) and (delta.get("tool_calls") or delta.get("function_call")):
        return True
    return bool(choice.get("logprobs"))
