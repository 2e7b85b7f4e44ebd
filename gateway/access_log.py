"""One structured JSON line per client request, on the ``gateway.access`` logger.

Fields: ``ts`` (Unix seconds), ``id`` (also sent as ``x-gateway-request-id``), ``tenant``
(from the API key, when the policy has tenants), ``model``
(public), ``pool``, ``backend``, ``status``, ``error`` (the OpenAI error code, or null),
``stream``, ``priority``, ``queue_ms``, ``ttft_ms``, ``duration_ms``, ``tokens_in`` and
``tokens_out`` (from the backend's usage when it sent one; ``tokens_out`` otherwise counts
streamed token events), ``route`` (why this pool), and the TTFT predictor's view of the
dispatch: ``ttft_inputs`` (its features), ``ttft_predicted_ms`` and ``ttft_backend_ms`` (the
first token as it saw it, from dispatch: the queue excluded). Never prompt text, never a
header value the client sent (so never a key). A request refused before reaching a backend
has the fields it got that far, the others null.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import IO, Any

import orjson

ACCESS_LOGGER = "gateway.access"
BATCH = 512  # lines per write at most


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


class BackgroundWriter(logging.Handler):
    """Writes a logger's lines to a stream from a daemon thread of its own.

    Why: a write to a pipe or terminal that nobody drains blocks, and a blocking write on the
    event loop stalls every request. ``emit`` (on the loop) only enqueues; when the writer
    falls behind by ``max_queued`` lines, lines are dropped (and counted) rather than waited
    for. ``stop`` flushes for at most ``timeout_s``: a stalled stream cannot hold up exit.
    ``close`` leaves the thread running: ``logging.config.dictConfig`` (uvicorn's start-up)
    closes every existing handler, and this one must outlive that.
    """

    def __init__(self, stream: IO[str], max_queued: int = 10_000) -> None:
        super().__init__()
        self._stream = stream
        self._lines: queue.Queue[str | None] = queue.Queue(max_queued)
        self.dropped = 0
        self._thread = threading.Thread(target=self._run, name="access-log", daemon=True)
        self._thread.start()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._lines.put_nowait(record.getMessage() + "\n")
        except queue.Full:
            self.dropped += 1

    def stop(self, timeout_s: float = 2.0) -> None:
        try:
            self._lines.put(None, timeout=timeout_s)
        except queue.Full:
            return  # the writer is stuck on its stream: nothing more can be flushed
        self._thread.join(timeout_s)

    def _run(self) -> None:
        stopped = False
        while not stopped:
            batch, stopped = self._take()
            try:
                # One write and one flush for every line queued since the last: under load
                # the thread wakes once per batch, not once per line, and holds the GIL
                # (which the event loop needs) for less time.
                self._stream.write("".join(batch))
                self._stream.flush()
            except (OSError, ValueError):
                return  # the stream is gone (closed pipe): nothing left to write to

    def _take(self) -> tuple[list[str], bool]:
        """The next line and the lines queued behind it (at most ``BATCH``), and whether
        ``stop`` was among them (the lines before it are still written)."""
        batch: list[str] = []
        line = self._lines.get()
        while line is not None:
            batch.append(line)
            if len(batch) >= BATCH:
                return batch, False
            try:
                line = self._lines.get_nowait()
            except queue.Empty:
                return batch, False
        return batch, True


def write_in_background(logger: logging.Logger, stream: IO[str]) -> BackgroundWriter:
    """Route ``logger``'s lines (bare, they are JSON) to ``stream`` through a writer thread."""
    writer = BackgroundWriter(stream)
    logger.addHandler(writer)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return writer
