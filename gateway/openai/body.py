"""Read a request body without ever holding more than the policy's limit in memory."""

from __future__ import annotations

import asyncio

from starlette.requests import ClientDisconnect, Request

from gateway.errors import InvalidRequest, PayloadTooLarge, RequestTimeout


async def read_body(request: Request, limit: int, timeout_s: float | None = None) -> bytes:
    """The whole body; 413 over ``limit`` bytes, 408 when it takes longer than ``timeout_s``
    (a slow client must not hold a slot)."""
    try:
        async with asyncio.timeout(timeout_s):
            return await _read(request, limit)
    except TimeoutError:
        raise RequestTimeout(
            f"The request body did not arrive within {timeout_s:g} s.", code="body_timeout"
        ) from None


async def _read(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise InvalidRequest("The Content-Length header is not a number.")
        if int(declared) > limit:
            raise _too_large(limit)
    parts: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise _too_large(limit)
            parts.append(chunk)
    except ClientDisconnect:
        raise InvalidRequest("The client closed the connection while sending the body.") from None
    return b"".join(parts)


def _too_large(limit: int) -> PayloadTooLarge:
    return PayloadTooLarge(
        f"The request body is larger than the gateway's limit of {limit} bytes.",
        code="body_too_large",
    )
