"""The access log's background writer: the event loop never waits on the stream."""

from __future__ import annotations

import io
import logging
import threading

from gateway.access_log import BackgroundWriter, write_in_background


class StuckStream(io.StringIO):
    """A stream whose writes block until released, like a pipe nobody drains."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def write(self, text: str) -> int:
        self.release.wait()
        return super().write(text)


def _record(message: str) -> logging.LogRecord:
    return logging.LogRecord("gateway.access", logging.INFO, __file__, 1, message, None, None)


def test_lines_reach_the_stream_in_order() -> None:
    stream = io.StringIO()
    writer = BackgroundWriter(stream)
    for i in range(100):
        writer.emit(_record(f'{{"n": {i}}}'))
    writer.stop()
    assert stream.getvalue().splitlines() == [f'{{"n": {i}}}' for i in range(100)]


def test_a_stuck_stream_drops_lines_instead_of_blocking() -> None:
    stream = StuckStream()
    writer = BackgroundWriter(stream, max_queued=10)
    for i in range(50):  # returns at once: the writer thread holds one, ten wait, rest drop
        writer.emit(_record(str(i)))
    assert writer.dropped >= 50 - 11
    writer.stop(timeout_s=0.05)  # cannot flush a stuck stream, and does not hang
    stream.release.set()


def test_write_in_background_routes_a_logger() -> None:
    stream = io.StringIO()
    logger = logging.getLogger("test.access.writer")
    writer = write_in_background(logger, stream)
    logger.info('{"id": "x"}')
    writer.stop()
    logger.removeHandler(writer)
    assert stream.getvalue() == '{"id": "x"}\n'
    assert logger.propagate is False


def test_survives_logging_reconfiguration() -> None:
    # uvicorn's start-up runs dictConfig, which closes every handler that exists.
    import logging.config

    stream = io.StringIO()
    logger = logging.getLogger("test.access.reconfigured")
    writer = write_in_background(logger, stream)
    logging.config.dictConfig({"version": 1, "disable_existing_loggers": False})
    logger.info("after")
    writer.stop()
    logger.removeHandler(writer)
    assert stream.getvalue() == "after\n"


class CountingStream(StuckStream):
    def __init__(self) -> None:
        super().__init__()
        self.writes = 0
        self.entered = threading.Event()

    def write(self, text: str) -> int:
        self.writes += 1
        self.entered.set()
        return super().write(text)


def test_lines_queued_behind_a_slow_write_go_out_in_one_write() -> None:
    stream = CountingStream()
    writer = BackgroundWriter(stream)
    writer.emit(_record("first"))  # the thread takes it and blocks in write
    assert stream.entered.wait(5)
    for i in range(20):
        writer.emit(_record(str(i)))
    stream.release.set()
    writer.stop()
    assert stream.getvalue().splitlines() == ["first", *(str(i) for i in range(20))]
    assert stream.writes == 2
