"""One structured JSON line per client request, on the ``gateway.access`` logger.

Fields: ``ts`` (Unix seconds), ``id`` (also sent as ``x-gateway-request-id``), ``model``
(public), ``pool``, ``backend``, ``status``, ``error`` (the OpenAI error code, or null),
``stream``, ``priority``, ``queue_ms``, ``ttft_ms``, ``duration_ms``, ``tokens_in`` and
``tokens_out`` (from the backend's usage when it sent one; ``tokens_out`` otherwise counts
streamed token events), ``route`` (why this pool). Never prompt text, never a header value
the client sent (so never a key). A request refused before reaching a backend has the
fields it got that far, the others null.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import orjson

ACCESS_LOGGER = "gateway.access"


class AccessLog:
    def __init__(
        self,
        logger: logging.Logger | None = None,
        wall: Callable[[], float] = time.time,
        enabled: bool = True,
    ) -> None:
        self._logger = logger or logging.getLogger(ACCESS_LOGGER)
        self._wall = wall
        self.enabled = enabled

    def write(self, fields: dict[str, Any]) -> None:
        if self.enabled and self._logger.isEnabledFor(logging.INFO):
            line = {"ts": round(self._wall(), 3), **fields}
            self._logger.info(orjson.dumps(line).decode())


def ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 2)
