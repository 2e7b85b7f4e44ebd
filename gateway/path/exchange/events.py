"""Re-frame an upstream event stream for the client, a chunk at a time.

Every complete ``data:`` line of a chunk is rewritten (the public model name put back,
``endpoints.show_public_model``; configured secrets removed) and the results are joined, so events
that arrive together leave together. A typed stream (the Responses API) keeps each event's
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
from gateway.openai import sse
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
        after.token_seen, after.token_events = True, self.token_events
        after.events = self.events
        return after

    def feed(self, chunk: bytes | None) -> bytes:
        """Frames for the client from one upstream chunk (None: the stream ended)."""
        lines = self._lines.feed(chunk) if chunk is not None else self._lines.flush()
        out = self._frames(lines)
        if chunk is None and not self.done:
            if self.ended_well:
                self.done = True
            else:
                self._fail("the stream ended before its last event")
        return out

    def _frames(self, lines: list[bytes]) -> bytes:
        out: list[bytes] = []
        for line in lines:
            if not line:
                continue  # the blank line that ends each event
            if self._typed and line.startswith(_EVENT):
                self._event = line[len(_EVENT) :].strip()
                continue
            payload = sse.data_payload(line)
            if payload is None:
                continue
            if payload == b"[DONE]":
                self.done = True
                break
            frame = self._frame(payload)
            if frame is None:
                break
            out.append(frame)
        return out[0] if len(out) == 1 else b"".join(out)

    def _frame(self, payload: bytes) -> bytes | None:
        try:
            data = orjson.loads(self._redactor.content(payload) if self._secrets else payload)
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
