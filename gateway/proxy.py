"""Forward a planned request to its backend and relay the answer.

Streaming answers are relayed event by event: each upstream ``data:`` line is re-framed (its
``model`` set back to the public name) and sent on at once. Timeouts come from the pool:
``connect_s`` for the connection, ``first_token_s`` until the first event, ``idle_s`` between
events, ``total_s`` for the whole exchange. An error before the response starts is an HTTP
error; after, it ends the stream with an error event and ``data: [DONE]``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx2 as httpx
import orjson
from starlette.responses import Response, StreamingResponse

from gateway import sse, upstream_errors
from gateway.errors import GatewayError, GatewayTimeout
from gateway.lifecycle import Lease, Outcome
from gateway.policy.schema import Timeouts

_PATHS = {"chat": "/v1/chat/completions", "completions": "/v1/completions"}
_MAX_ERROR_BODY = 64 * 1024


class Proxy:
    """Sends requests upstream through one shared ``httpx.AsyncClient``."""

    def __init__(self, client: httpx.AsyncClient, clock: Callable[[], float]) -> None:
        self._client = client
        self._clock = clock

    async def forward(self, lease: Lease, headers: dict[str, str]) -> Response:
        timeouts = lease.plan.pool.timeouts
        try:
            response = await self._open(lease, timeouts)
        except GatewayError as exc:
            lease.finish(Outcome(exc.http_status(), error_kind=exc.code))
            raise
        if response.status_code != 200:
            raise await self._refuse(lease, response)
        if lease.ctx.request.stream:
            return StreamingResponse(
                self._relay(lease, response, timeouts),
                media_type="text/event-stream",
                headers={**headers, "cache-control": "no-cache", "x-accel-buffering": "no"},
            )
        return await self._whole(lease, response, headers)

    async def _open(self, lease: Lease, timeouts: Timeouts) -> httpx.Response:
        ctx = lease.ctx
        spec = lease.backend.spec
        body = dict(ctx.request.body)
        body["model"] = spec.served_model
        request = self._client.build_request(
            "POST",
            spec.url + _PATHS[ctx.request.endpoint],
            content=orjson.dumps(body),
            headers={"content-type": "application/json", "x-request-id": ctx.request_id},
            timeout=httpx.Timeout(
                connect=timeouts.connect_s,
                read=timeouts.first_token_s if ctx.request.stream else timeouts.total_s,
                write=timeouts.connect_s,
                pool=timeouts.connect_s,
            ),
        )
        try:
            async with asyncio.timeout(self._remaining(lease, timeouts)):
                return await self._client.send(request, stream=True)
        except (httpx.HTTPError, TimeoutError) as exc:
            raise upstream_errors.from_exception(exc, spec.name) from None

    async def _refuse(self, lease: Lease, response: httpx.Response) -> GatewayError:
        try:
            body = await _read_capped(response, _MAX_ERROR_BODY)
        except httpx.HTTPError:
            body = b""
        finally:
            await response.aclose()
        error = upstream_errors.from_status(
            response.status_code, body, response.headers, lease.backend.name
        )
        kind = "status" if error.http_status() >= 500 else None
        lease.finish(Outcome(error.http_status(), error_kind=kind))
        return error

    async def _whole(
        self, lease: Lease, response: httpx.Response, headers: dict[str, str]
    ) -> Response:
        outcome = Outcome(200)
        try:
            async with asyncio.timeout(self._remaining(lease, lease.plan.pool.timeouts)):
                raw = await response.aread()
            data = _json_object(raw)
            if data is None:
                raise upstream_errors.invalid_response(
                    lease.backend.name, "body is not a JSON object"
                )
            data["model"] = lease.ctx.request.model
            outcome.first_token_at = self._clock()
            return Response(orjson.dumps(data), media_type="application/json", headers=headers)
        except (httpx.HTTPError, TimeoutError) as exc:
            error = upstream_errors.from_exception(exc, lease.backend.name)
            outcome = Outcome(error.http_status(), error_kind=_kind(error))
            raise error from None
        except GatewayError as exc:
            outcome = Outcome(exc.http_status(), error_kind=_kind(exc))
            raise
        finally:
            await response.aclose()
            lease.finish(outcome)

    async def _relay(
        self, lease: Lease, response: httpx.Response, timeouts: Timeouts
    ) -> AsyncIterator[bytes]:
        outcome = Outcome(200)
        public = lease.ctx.request.model
        lines = sse.iter_lines(response.aiter_raw())
        error: GatewayError | None = None
        try:
            while True:
                budget = (
                    timeouts.first_token_s if outcome.first_token_at is None else timeouts.idle_s
                )
                line = await self._next_line(lines, min(budget, self._remaining(lease, timeouts)))
                if line is None:
                    error = upstream_errors.invalid_response(
                        lease.backend.name, "the stream ended before data: [DONE]"
                    )
                    break
                payload = sse.data_payload(line)
                if payload is None:
                    continue
                if payload == b"[DONE]":
                    # Reading to the end lets the connection go back to the pool.
                    await self._drain(lines, timeouts.idle_s)
                    break
                chunk = _rewrite_model(payload, public)
                if chunk is None:
                    error = upstream_errors.invalid_response(
                        lease.backend.name, "an event is not JSON"
                    )
                    break
                if outcome.first_token_at is None:
                    outcome.first_token_at = self._clock()
                yield sse.frame(chunk)
        except (httpx.HTTPError, TimeoutError) as exc:
            error = upstream_errors.from_exception(exc, lease.backend.name)
        except GatewayError as exc:
            error = exc
        finally:
            await response.aclose()
            if error is not None:
                outcome.status = error.http_status()
                outcome.error_kind = _kind(error)
            lease.finish(outcome)
        if error is not None:
            yield sse.frame_json(error.body())
        yield sse.DONE

    @staticmethod
    async def _drain(lines: AsyncIterator[bytes], budget_s: float) -> None:
        async with asyncio.timeout(budget_s):
            async for _ in lines:
                pass

    @staticmethod
    async def _next_line(lines: AsyncIterator[bytes], budget_s: float) -> bytes | None:
        async with asyncio.timeout(budget_s):
            return await anext(lines, None)

    def _remaining(self, lease: Lease, timeouts: Timeouts) -> float:
        left = timeouts.total_s - (self._clock() - lease.ctx.arrival)
        if left <= 0:
            raise GatewayTimeout("The request exceeded its total time limit.", code="total_timeout")
        return left


def _kind(error: GatewayError) -> str:
    return error.code or type(error).__name__


def _json_object(raw: bytes) -> dict[str, Any] | None:
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


def _rewrite_model(payload: bytes, public: str) -> bytes | None:
    data = _json_object(payload)
    if data is None:
        return None
    if "model" in data:
        data["model"] = public
    return orjson.dumps(data)


async def _read_capped(response: httpx.Response, limit: int) -> bytes:
    parts: list[bytes] = []
    size = 0
    async for chunk in response.aiter_raw():
        parts.append(chunk)
        size += len(chunk)
        if size >= limit:
            break
    return b"".join(parts)[:limit]
