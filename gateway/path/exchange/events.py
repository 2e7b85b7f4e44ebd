"""Re-frame an upstream event stream for the client, a chunk at a time.

Every complete ``data:`` line of a chunk is rewritten (the public model name put back,
``endpoints.show_public_model``; configured secrets removed) and the results are joined, so events
that arrive together leave together. A plain token event (``openai/plain_events.py``: a
choice's next text, no finish, usage or error) is relayed by its bytes, its model name spliced
in, without a parse; its JSON is kept for whoever needs it later, unread (the text for a
continuation, ``Relayed.keep``; the cache's capture, ``AnswerCapture.keep``). Every other
event is parsed and written again. A typed stream (the Responses API) keeps each event's
``event:`` line in front of its data and ends with its terminal event and the end of the body
instead of ``data: [DONE]``. A backend's error event is never relayed as sent: it ends the
stream and the relay reports a rebuilt error; a stream that ends with an error has no
``data: [DONE]`` (a client must not take it for a whole answer).

A stream that may be continued elsewhere if its replica dies (``splice.py``) also keeps what
it relayed (``relayed``: each event's text appended, joined only to continue); the relay of
a continuation (``continued``) makes its events the first stream's: same ``id`` and
``created``, its role-only opening left out, its usage summed with what came before.
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway.cache.store.capture import AnswerCapture
from gateway.errors import GatewayError
from gateway.openai import endpoints as wire
from gateway.openai import plain_events, sse
from gateway.path.exchange.lease import Lease
from gateway.recovery.continuation import Relayed
from gateway.upstream import failures as upstream_errors

_EVENT = b"event:"


class EventRelay:
    """One stream's re-framing state."""

    def __init__(
        self, lease: Lease, capture: AnswerCapture | None, relayed: Relayed | None = None
    ) -> None:
        self._public = lease.ctx.request.model
        self._backend = lease.backend.name
        self._redactor = lease.ctx.policy.redactor
        self._secrets = self._redactor.redacts_content
        self._capture = capture
        self._endpoint = lease.ctx.request.endpoint
        self._typed = wire.typed_events(self._endpoint)
        # Plain token events are relayed by their bytes (``plain_events.py``); not those of a
        # continuation (``continued``: each is made the first stream's).
        self._marker = plain_events.text_marker(self._endpoint)
        self._public_json = orjson.dumps(self._public)
        self._template: plain_events.Template | None = None
        self._lines = sse.LineSplitter()
        self._event: bytes | None = None  # the pending ``event:`` line's name (typed streams)
        self.done = False
        self.ended_well = False  # a typed stream's terminal event was relayed
        self.events = 0  # relayed, for the sequence number of a typed error event
        self.token_seen = False  # a role-only first chunk is not a token
        self.token_events = 0
        self.usage: tuple[int | None, int] | None = None  # when the answer reports usage
        self.error: GatewayError | None = None
        self.relayed = relayed  # kept when the stream may be continued
        self.before: int | None = None  # a continuation: completion tokens relayed before it

    def continued(self, lease: Lease) -> EventRelay:
        """The relay of a continuation of this stream on ``lease``'s replica."""
        after = EventRelay(lease, self._capture, self.relayed)
        relayed = self.relayed
        # The tokens it writes again (``Relayed.settle``) count once, as relayed before.
        after.before = relayed.completion_tokens - relayed.owed_tokens if relayed is not None else 0
        after._marker = None
        after.token_seen, after.token_events = True, self.token_events
        after.events = self.events
        return after

    def feed(self, chunk: bytes | None) -> bytes:
        """Frames for the client from one upstream chunk (None: the stream ended)."""
        if chunk is not None and self._template is not None:
            frame = self.plain(chunk)
            if frame is not None:
                return frame
        lines = self._lines.feed(chunk) if chunk is not None else self._lines.flush()
        out = self._frames(lines)
        if chunk is None and not self.done:
            if self.ended_well:
                self.done = True
            else:
                self._fail("the stream ended before its last event")
        return out

    @property
    def has_template(self) -> bool:
        """Whether plain token events may be relayed by ``plain`` (a plain token made the
        stream's template; never in a continuation's relay or with content redaction)."""
        return self._template is not None

    def plain(self, chunk: bytes) -> bytes | None:
        """``chunk``'s frame when it is one plain token event made on the stream's template,
        relayed as ``feed`` would; None (and nothing done) when it may be anything else."""
        template = self._template
        if template is None or self._lines.pending:
            return None
        frame = template.frame(chunk)
        if frame is not None:
            self._note_plain(frame)
        return frame

    def _frames(self, lines: list[bytes]) -> bytes:
        out: list[bytes] = []
        marker, template = self._marker, self._template
        for line in lines:
            if not line:
                continue  # the blank line that ends each event
            if template is not None:  # several events in one chunk: each line checked
                frame = template.line(line)
                if frame is not None:
                    self._note_plain(frame)
                    out.append(frame)
                    continue
            if marker is not None and line.startswith(b"data: {"):
                payload = line[6:]
                if self._secrets:
                    payload = self._redactor.content(payload)
                plain = plain_events.plain_token(payload, marker, self._public_json)
                if plain is not None:
                    if self._template is None and not self._secrets:  # (it would not redact)
                        self._template = template = plain_events.template(payload, plain, marker)
                    frame = b"data: " + plain + b"\n\n"
                    self._note_plain(frame)
                    out.append(frame)
                    continue
            elif self._typed and line.startswith(_EVENT):
                self._event = line[len(_EVENT) :].strip()
                continue
            else:
                found = sse.data_payload(line)
                if found is None:
                    continue
                payload = found
                if self._secrets:
                    payload = self._redactor.content(payload)
            if payload == b"[DONE]":
                self.done = True
                break
            parsed = self._frame(payload)
            if parsed is None:
                break
            out.append(parsed)
        return out[0] if len(out) == 1 else b"".join(out)

    def _note_plain(self, frame: bytes) -> None:
        """A plain token event relayed unparsed (``plain_events.py``): counted, and its frame
        kept for whoever reads it later."""
        self.token_seen = True
        self.token_events += 1
        self.events += 1
        if self.relayed is not None:
            self.relayed.keep(frame)
        if self._capture is not None:
            self._capture.keep(frame)

    def _frame(self, payload: bytes) -> bytes | None:
        try:
            data = orjson.loads(payload)
        except orjson.JSONDecodeError:
            data = None
        if type(data) is not dict:
            self._fail("an event is not JSON")
            return None
        if upstream_errors.is_error_event(data):  # rebuilt, never relayed as sent
            self.done = True
            self.error = upstream_errors.from_event(data, self._backend, self._redactor)
            return None
        if self._typed:
            return self._typed_frame(data)
        if "model" in data:  # ``endpoints.show_public_model`` for chunks
            data["model"] = self._public
        if self.relayed is not None and not self._keep(self.relayed, data):
            return b""
        self._note(data)
        return b"data: " + orjson.dumps(data) + b"\n\n"

    def _keep(self, relayed: Relayed, data: dict[str, Any]) -> bool:
        """Whether a chunk is relayed (a continuation's role-only opening is not); notes
        its text, and makes a continuation's chunk the first stream's."""
        if self.before is None:
            relayed.see(data)
            return True
        if not relayed.settle(data):
            return False
        if not wire.carries_token(data) and "usage" not in data and not _finishes(data):
            return False
        relayed.restamp(data)
        relayed.see(data)
        usage = data.get("usage")
        if isinstance(usage, dict):
            prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
            if isinstance(prompt, int) and isinstance(completion, int):
                # The continuation's prompt held the text before it; its tokens are output.
                prompt = max(0, prompt - self.before)
                completion += self.before
                usage.update(prompt_tokens=prompt, completion_tokens=completion,
                             total_tokens=prompt + completion)  # fmt: skip
        return True

    def _typed_frame(self, data: dict[str, Any]) -> bytes:
        wire.show_public_model(data, self._public)
        self._note(data)
        if wire.is_terminal(data):
            self.ended_well = True
        name, self._event = self._event, None
        return wire.frame(orjson.dumps(data), name)

    def _note(self, data: dict[str, Any]) -> None:
        """What an event says of the exchange: a token, usage; the capture sees it."""
        if wire.carries_token(data):
            self.token_seen = True
            self.token_events += 1
        if "usage" in data or "response" in data:
            prompt, completion = wire.usage(data)
            if completion is not None:
                self.usage = (prompt, completion)
        if self._capture is not None:
            self._capture.event(data)
        self.events += 1

    def ending(self, error: dict[str, Any] | None) -> bytes:
        """The stream's last bytes: ``error`` (an error body) as an event, or else ``data:
        [DONE]`` unless the stream is typed (the Responses API has none)."""
        if error is not None:
            return wire.error_frame(self._endpoint, error, self.events)
        return b"" if self._typed else sse.DONE

    def _fail(self, detail: str) -> None:
        self.done = True
        if self.error is None:
            self.error = upstream_errors.invalid_response(self._backend, detail)


def _finishes(data: dict[str, Any]) -> bool:
    choices = data.get("choices")
    return isinstance(choices, list) and any(
        isinstance(c, dict) and c.get("finish_reason") for c in choices
    )


def json_object(raw: bytes) -> dict[str, Any] | None:
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None
