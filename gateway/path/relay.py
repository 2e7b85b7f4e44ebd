"""Forward a planned request to its backend and relay the answer.

Streaming answers are relayed event by event (``exchange/events.py``): each upstream ``data:``
line is re-framed (its model name set back to the public one) and sent on at once; what differs
between endpoints (upstream paths, usage, typed events) is in ``gateway/openai/endpoints.py``.
Timeouts come from the pool: ``connect_s`` for the connection, ``first_token_s`` until the first
event, ``idle_s`` between events, ``total_s`` for the whole exchange. A stream's response head
goes out with its first token (``exchange/first_token.py``): an error before it is an HTTP
error (a 503 with Retry-After when no replica could serve it); after, it ends the stream with
an error event and no ``data: [DONE]`` (a typed Responses API stream: an ``error`` event),
unless it can be continued on another replica (``exchange/splice.py``). However the exchange
ends early (error, timeout, client gone), the upstream connection is closed at once so the
backend stops generating; after a clean end it goes back to the pool.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import orjson
from starlette.responses import Response

from gateway.cache.store.capture import AnswerCapture
from gateway.errors import GatewayError, GatewayTimeout
from gateway.openai import endpoints as wire
from gateway.openai.disconnect import DisconnectWatch
from gateway.openai.streaming import EventStreamResponse
from gateway.path.exchange.events import EventRelay, json_object
from gateway.path.exchange.first_token import Primed
from gateway.path.exchange.lease import Lease, Outcome
from gateway.path.exchange.splice import Continuer, Splice
from gateway.path.exchange.stream import StreamRelay
from gateway.path.flow import Flow, Services
from gateway.policy.compile import BackendSpec
from gateway.recovery.continuation import Relayed
from gateway.schema import Timeouts
from gateway.upstream import ConnectionPool, UpstreamIOError, UpstreamResponse
from gateway.upstream import failures as upstream_errors

_MAX_ERROR_BODY = 64 * 1024


def _upstream_headers(spec: BackendSpec, accept: str, request_id: str) -> list[tuple[str, str]]:
    """The only headers sent upstream: none of the client's (its Authorization above all)
    is forwarded; the backend's own key, when the policy names one, is added here."""
    headers = [
        ("content-type", "application/json"),
        ("accept", accept),
        ("x-request-id", request_id),
    ]
    if spec.api_key is not None:
        headers.append(spec.api_key.authorization())
    return headers


async def relay_stage(flow: Flow, services: Services) -> Response:
    """The answer, relayed: an event stream or a whole JSON body."""
    opened = flow.opened
    assert opened is not None, "the dispatch stage runs before this one"
    return await services.relay.respond(
        opened.lease,
        opened.response,
        flow.headers,
        flow.watch,
        flow.capture,
        opened.primed,
        services.dispatcher,
    )


class Proxy:
    """Sends requests upstream through one shared connection pool."""

    def __init__(self, pool: ConnectionPool, clock: Callable[[], float]) -> None:
        self._pool = pool
        self._clock = clock

    async def open(self, lease: Lease, body: dict[str, Any] | None = None) -> UpstreamResponse:
        """Send the request (``body``: another than the client's, a continuation's) and wait
        for a 200 head; a failure raises (nothing is finished: the caller decides between a
        retry and an answer)."""
        timeouts = lease.plan.pool.timeouts
        response = await self._send(lease, timeouts, body)
        if response.status != 200:
            raise await self._refusal(lease, response)
        return response

    async def respond(
        self,
        lease: Lease,
        response: UpstreamResponse,
        headers: dict[str, str],
        watch: DisconnectWatch,
        capture: AnswerCapture | None,
        primed: Primed,
        resume: Continuer | None = None,
    ) -> Response:
        """Relay an opened exchange to the client; from here on the lease is finished here.
        ``capture`` (the response cache's) sees the answer and gets it once it ended well;
        ``primed``: what was read already (a stream's chunks up to its first token, relayed
        first; a whole answer's body); ``resume``:
        how a stream cut short is continued (``exchange/splice.py``)."""
        if lease.ctx.request.stream:
            splice = None
            if resume is not None and resume.may_continue(lease):
                limit = lease.plan.pool.settings.recovery.max_continuations
                splice = Splice(resume.continuation, limit, resume.recovery, lease)
            relayed = Relayed() if splice is not None else None
            timeouts, events = lease.plan.pool.timeouts, EventRelay(lease, capture, relayed)
            source = StreamRelay(
                lease, response, timeouts, self._clock, events, capture, primed, splice
            )
            return EventStreamResponse(source, watch, headers)
        return self._whole(lease, response, headers, capture, b"".join(primed.held))

    async def read_whole(self, lease: Lease, response: UpstreamResponse) -> bytes:
        """A whole answer's body; cut in the middle, a retryable error (nothing of it has
        reached the client: another replica may answer)."""
        try:
            async with asyncio.timeout(self._remaining(lease, lease.plan.pool.timeouts)):
                return await response.read()
        except (UpstreamIOError, TimeoutError) as exc:
            response.close()
            name = lease.backend.name
            raise upstream_errors.from_exception(exc, name, before_head=True) from None
        except BaseException:
            response.close()
            raise

    async def _send(
        self, lease: Lease, timeouts: Timeouts, sent: dict[str, Any] | None
    ) -> UpstreamResponse:
        ctx = lease.ctx
        spec = lease.backend.spec
        body = dict(ctx.request.body if sent is None else sent)
        body["model"] = spec.served_model
        wait = timeouts.first_token_s if ctx.request.stream else timeouts.total_s
        accept = "text/event-stream" if ctx.request.stream else "application/json"
        try:
            async with asyncio.timeout(min(wait, self._remaining(lease, timeouts))):
                return await self._pool.request(
                    spec.origin,
                    "POST",
                    wire.UPSTREAM_PATHS[ctx.request.endpoint],
                    _upstream_headers(spec, accept, ctx.request_id),
                    orjson.dumps(body),
                    connect_timeout_s=timeouts.connect_s,
                )
        except (UpstreamIOError, TimeoutError) as exc:
            raise upstream_errors.from_exception(exc, spec.name, before_head=True) from None

    async def _refusal(self, lease: Lease, response: UpstreamResponse) -> GatewayError:
        try:
            async with asyncio.timeout(lease.plan.pool.timeouts.idle_s):
                body = await response.read(_MAX_ERROR_BODY)
        except (UpstreamIOError, TimeoutError):
            body = b""
        finally:
            response.close()
        return upstream_errors.from_status(
            response.status,
            body,
            response.header("retry-after"),
            lease.backend.name,
            lease.ctx.policy.redactor,
        )

    def _whole(
        self,
        lease: Lease,
        response: UpstreamResponse,
        headers: dict[str, str],
        capture: AnswerCapture | None,
        raw: bytes,
    ) -> Response:
        """The whole answer (read by the dispatch stage, ``read_whole``) as the client's."""
        outcome = Outcome(200)
        try:
            data = json_object(lease.ctx.policy.redactor.content(raw))
            if data is None:
                raise upstream_errors.invalid_response(lease.backend.name, "body is not JSON")
            request = lease.ctx.request
            wire.show_public_model(data, request.model, always=wire.always_named(request.endpoint))
            outcome.first_token_at = self._clock()
            outcome.input_tokens, outcome.output_tokens = wire.usage(data)
            if capture is not None:
                capture.whole(data)
            return Response(orjson.dumps(data), media_type="application/json", headers=headers)
        except GatewayError as exc:
            outcome = Outcome(exc.http_status(), error_kind=_kind(exc))
            raise
        finally:
            response.close()
            lease.finish(outcome)

    def _remaining(self, lease: Lease, timeouts: Timeouts) -> float:
        left = timeouts.total_s - (self._clock() - lease.ctx.arrival)
        if left <= 0:
            raise GatewayTimeout("The request exceeded its total time limit.", code="total_timeout")
        return left


def _kind(error: GatewayError) -> str:
    return error.code or type(error).__name__
