"""Relay a streamed token event by its bytes, without parsing it: the common case, cheaply.

Most events of a chat or completions stream are alike: one choice's next piece of text,
no finish reason yet, no usage, no error. Such an event needs nothing from the relay but its
model name put back (``endpoints.show_public_model``) and to be counted as a token; parsing
it and writing it again (orjson) cost more than the rest of its way through the gateway.

Algorithm: ``plain_token`` recognises a ``data:`` line's payload as such an event by a few
byte searches, never a parse. In JSON text a double quote inside a string is always escaped
(``\\"``), so a quoted name followed by ``:`` (``"model":``) is always an object's key, and
a quoted name is a key or a whole string value: a model's text can never be mistaken for
these markers. The payload is a plain token when it is one object (``{`` ... ``}``) holding

- the text marker: ``"delta":{"content":"`` (chat) or ``"text":"`` (completions), with a
  first character other than the closing quote (the text is not empty);
- ``"finish_reason":null`` (the answer goes on);
- no ``"usage"`` and no ``"error"``, anywhere (a usage count, an error event);
- no ``"model"`` key, or exactly one, written ``"model":"<name>"`` (no space, no escape in
  the name) with no ``{`` between the object's opening and it, so it is the top-level one
  (a nested object's ``model`` is never rewritten).

Then ``with_model`` sets the name by splicing bytes.

The events of one stream differ in their text only (same id, creation time, model), so the
first plain token makes a ``Template``: its bytes before the text (``head``) and after it
(``tail``). A later chunk that is ``head`` + text + ``tail`` with no double quote in the text
is one plain token event: three searches for the whole chunk (``Template.line``: for each
``data:`` line of a chunk that holds several events). It cannot be anything else
valid: with no quote in the text, its JSON has the first event's structure (a text that ends
in a lone backslash would escape the tail's quote, and then the tail, whose quotes pair up,
leaves a string open: not JSON). Anything else (the role-only opening,
the finishing and usage events, error events, other servers' spellings such as a space after
the colon, or llama.cpp's ``choices`` before ``model``) returns None and takes the parsing
way, which is exact. What the fast way gives up: a payload of this shape that is not valid
JSON reaches the client as the server sent it, instead of ending the stream.

``bytes.find``, never ``in``: CPython 3.11's ``bytes.__contains__`` first tries its argument
as an integer and raises (and clears) a formatted TypeError for every bytes argument, which
costs more than the search itself.
"""

from __future__ import annotations

from dataclasses import dataclass

CHAT_TEXT = b'"delta":{"content":"'
COMPLETION_TEXT = b'"text":"'
_GOES_ON = b'"finish_reason":null'
_MODEL = b'"model"'
_MODEL_VALUE = b'"model":"'


@dataclass(frozen=True, slots=True)
class Template:
    """The bytes around the text of a stream's plain token events (see the module's
    docstring): a chunk that is exactly ``head`` + text + ``tail`` is another plain token of the
    same stream, relayed as ``public_head`` + text + ``tail``."""

    head: bytes  # ``data: `` and the JSON up to the text's opening quote
    tail: bytes  # from its closing quote to the end of the event (the blank line included)
    public_head: bytes  # ``head`` with the public model name
    line_tail: bytes  # ``tail`` without its line breaks: the end of the ``data:`` line

    def frame(self, chunk: bytes) -> bytes | None:
        """``chunk``'s frame for the client when it is one event made on this template with a
        non-empty text; None otherwise."""
        if not self._fits(chunk, self.tail):
            return None
        public = self.public_head
        return chunk if public is self.head else public + chunk[len(self.head) :]

    def line(self, line: bytes) -> bytes | None:
        """The frame of one ``data:`` line (its line break removed: a chunk of several events
        split into lines) when it is an event made on this template with a non-empty text,
        as ``frame`` takes a chunk; None otherwise."""
        if not self._fits(line, self.line_tail):
            return None
        return self.public_head + line[len(self.head) :] + b"\n\n"

    def _fits(self, data: bytes, tail: bytes) -> bool:
        """``data`` is ``head`` + a non-empty text without a double quote + ``tail``."""
        head = self.head
        if not data.startswith(head) or not data.endswith(tail):
            return False
        start, end = len(head), len(data) - len(tail)
        return end > start and data.find(b'"', start, end) < 0


def template(payload: bytes, public_payload: bytes, marker: bytes) -> Template | None:
    """The template of a plain token event (``payload``, its model made public:
    ``public_payload``, as ``plain_token`` returned it); None when its text holds an escape."""
    start = payload.find(marker) + len(marker)
    end = payload.find(b'"', start)
    if payload.find(b"\\", start, end) >= 0:
        return None  # a quote in the text may be escaped: where it ends is not sure
    head = b"data: " + payload[:start]
    shift = len(public_payload) - len(payload)  # the model name is before the text
    public_head = b"data: " + public_payload[: start + shift]
    public_head = head if public_head == head else public_head
    return Template(head, payload[end:] + b"\n\n", public_head, payload[end:])


def text_marker(endpoint: str) -> bytes | None:
    """The marker of a token's text in ``endpoint``'s chunks; None where events are never
    taken the fast way (typed events, other endpoints)."""
    if endpoint == "chat":
        return CHAT_TEXT
    if endpoint == "completions":
        return COMPLETION_TEXT
    return None


def plain_token(payload: bytes, marker: bytes, public: bytes) -> bytes | None:
    """``payload`` with its model named ``public`` (a JSON string, quotes included) when it
    is a plain token event (see the module's docstring); None otherwise."""
    at = payload.find(marker)
    if at < 0 or payload[at + len(marker) : at + len(marker) + 1] == b'"':
        return None
    if (
        payload[:1] != b"{"
        or payload[-1:] != b"}"
        or payload.find(_GOES_ON) < 0
        or payload.find(b'"usage"') >= 0
        or payload.find(b'"error"') >= 0
    ):
        return None
    return with_model(payload, public)


def with_model(payload: bytes, public: bytes) -> bytes | None:
    """``payload`` (one JSON object) with its top-level ``"model":"<name>"`` made ``public``;
    unchanged without a ``model`` key; None when the key is not in the one form handled here
    (see the module's docstring)."""
    at = payload.find(_MODEL)
    if at < 0:
        return payload
    if payload.find(_MODEL_VALUE, at, at + len(_MODEL_VALUE)) != at:
        return None  # another spelling, or not a string
    if payload.find(b"{", 1, at) >= 0 or payload.find(_MODEL, at + len(_MODEL)) >= 0:
        return None  # maybe a nested object's key; or a second one
    start = at + len(_MODEL_VALUE) - 1  # the value's opening quote
    end = payload.find(b'"', start + 1)
    if end < 0 or payload.find(b"\\", start, end) >= 0:
        return None
    if payload[start : end + 1] == public:
        return payload
    return payload[:start] + public + payload[end + 1 :]
