"""One structured JSON line per client request, on the ``gateway.access`` logger.

Fields: ``ts`` (Unix seconds), ``id`` (also sent as ``x-gateway-request-id``), ``tenant``
(from the API key, when the policy has tenants), ``model``
(public), ``pool``, ``backend``, ``status``, ``error`` (the OpenAI error code, or null),
``stream``, ``priority``, ``queue_ms``, ``ttft_ms``, ``duration_ms``, ``tokens_in`` and
``tokens_out`` (from the backend's usage when it sent one; ``tokens_out`` otherwise counts
streamed token events), ``route`` (why this pool), and the TTFT predictor's view of the
dispatch: ``ttft_inputs`` (its features), ``ttft_predicted_ms``, ``ttft_supported`` (whether
that prediction rested on the replica's observations, not on the predictor's prior) and
``ttft_backend_ms`` (the first token as it saw it, from dispatch: the queue excluded). Never
prompt text, never a header value the client sent (so never a key). A request refused before
reaching a backend has the fields it got that far, the others null.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import IO, Any

import orjson

ACCESS_LOGGER = "gateway.access"
BATCH = 512  # lines that wake the writer before its next flush


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
        logger = self._logger
        if self.enabled and logger.isEnabledFor(logging.INFO):
            line = orjson.dumps({"ts": round(self._wall(), 3), **fields}).decode()
            writer = sole_writer(logger)
            if writer is not None:
                writer.line(line)  # what logging would do, without a LogRecord per line
            else:
                logger.info(line)


def ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 2)


class BackgroundWriter(logging.Handler):
    """Writes a logger's lines to a stream from a daemon thread of its own.

    Why: a write to a pipe or terminal that nobody drains blocks, and a blocking write on the
    event loop stalls every request. ``emit`` (on the loop) only appends the line to a queue;
    the thread wakes every ``flush_s`` (or as soon as ``BATCH`` lines wait) and writes every
    line queued since, in one write and one flush. So the loop never wakes the thread per line
    (a lock, a signal and a contest for the GIL each time), and a busy gateway pays one
    thread wake-up per batch. When ``max_queued`` lines wait, lines are dropped (and counted)
    rather than waited for. ``stop`` flushes for at most ``timeout_s``: a stalled stream
    cannot hold up exit. ``close`` leaves the thread running: ``logging.config.dictConfig``
    (uvicorn's start-up) closes every existing handler, and this one must outlive that.
    """

    def __init__(self, stream: IO[str], max_queued: int = 10_000, flush_s: float = 0.05) -> None:
        super().__init__()
        self._stream = stream
        self._max_queued = max_queued
        self._flush_s = flush_s
        self._lines: deque[str] = deque()  # append and popleft are safe across threads
        self._wake = threading.Event()
        self._stopping = False
        self.dropped = 0
        self._thread = threading.Thread(target=self._run, name="access-log", daemon=True)
        self._thread.start()

    def emit(self, record: logging.LogRecord) -> None:
        self.line(record.getMessage())

    def line(self, text: str) -> None:
        """Queue one line (``emit`` without a log record)."""
        lines = self._lines
        if len(lines) >= self._max_queued:
            self.dropped += 1
            return
        lines.append(text + "\n")
        if len(lines) == BATCH:
            self._wake.set()

    def stop(self, timeout_s: float = 2.0) -> None:
        self._stopping = True
        self._wake.set()
        self._thread.join(timeout_s)  # a writer stuck on its stream is left behind

    def _run(self) -> None:
        while True:
            self._wake.wait(self._flush_s)
            self._wake.clear()
            stopping = self._stopping  # read before taking: lines queued before stop go out
            batch = self._take()
            if batch:
                try:
                    self._stream.write("".join(batch))
                    self._stream.flush()
                except (OSError, ValueError):
                    return  # the stream is gone (closed pipe): nothing left to write to
            if stopping and not self._lines:
                return

    def _take(self) -> list[str]:
        """Every line queued now (lines appended meanwhile wait for the next batch)."""
        lines = self._lines
        return [lines.popleft() for _ in range(len(lines))]


def sole_writer(logger: logging.Logger) -> BackgroundWriter | None:
    """The logger's only destination when it is a ``BackgroundWriter`` with nothing that
    could change a line on the way (no filter on the logger or the writer, the writer's level
    open, no propagation); None otherwise."""
    handlers = logger.handlers
    if len(handlers) != 1 or logger.propagate or logger.filters:
        return None
    writer = handlers[0]
    if type(writer) is not BackgroundWriter or writer.filters or writer.level > logging.INFO:
        return None
    return writer


def write_in_background(logger: logging.Logger, stream: IO[str]) -> BackgroundWriter:
    """Route ``logger``'s lines (bare, they are JSON) to ``stream`` through a writer thread."""
    writer = BackgroundWriter(stream)
    logger.addHandler(writer)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return writer
