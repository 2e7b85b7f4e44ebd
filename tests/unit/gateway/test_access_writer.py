"""The access log's background writer: the event loop never waits on the stream."""

from __future__ import annotations

import io
import logging
import threading

import pytest

from gateway.access_log import AccessLog, BackgroundWriter, sole_writer, write_in_background


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


def _logger(name: str, change: str) -> tuple[logging.Logger, BackgroundWriter]:
    logger = logging.getLogger(f"test.access.sole.{name}")
    writer = write_in_background(logger, io.StringIO())
    if change == "filter on the logger":
        logger.addFilter(lambda record: True)
    elif change == "filter on the writer":
        writer.addFilter(lambda record: True)
    elif change == "another handler":
        logger.addHandler(logging.NullHandler())
    elif change == "propagates":
        logger.propagate = True
    elif change == "writer level above info":
        writer.setLevel(logging.WARNING)
    return logger, writer


@pytest.mark.parametrize(
    ("change", "sole"),
    [
        ("none", True),
        ("filter on the logger", False),
        ("filter on the writer", False),
        ("another handler", False),
        ("propagates", False),
        ("writer level above info", False),
    ],
)
def test_the_access_log_skips_logging_only_when_nothing_could_differ(
    change: str, sole: bool
) -> None:
    logger, writer = _logger(change.replace(" ", "_"), change)
    try:
        assert (sole_writer(logger) is writer) is sole
    finally:
        writer.stop()
        for handler in list(logger.handlers):
            logger.removeHandler(handler)


def test_access_lines_through_the_sole_writer_reach_its_stream() -> None:
    stream = io.StringIO()
    logger = logging.getLogger("test.access.direct")
    writer = write_in_background(logger, stream)
    AccessLog(logger, wall=lambda: 1.0).write({"id": "x"})
    writer.stop()
    logger.removeHandler(writer)
    assert stream.getvalue() == '{"ts":1.0,"id":"x"}\n'
