"""The access line and the trace of a request carry no secret or key-shaped text."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import orjson
import pytest

from gateway.access_log import AccessLog
from gateway.path.report import Reporter
from gateway.security.redact import Redactor


class _Tracer:
    def __init__(self) -> None:
        self.fields: list[Mapping[str, Any]] = []

    def record(
        self,
        fields: Mapping[str, Any],
        arrival: float,
        end: float,
        stages: Sequence[tuple[str, float, float]],
    ) -> None:
        self.fields.append(fields)

    def shutdown(self) -> None:
        return None


def test_outside_text_is_redacted_in_the_access_log_and_the_trace(
    caplog: pytest.LogCaptureFixture,
) -> None:
    logger = logging.getLogger("test.report.access")
    caplog.set_level(logging.INFO, logger=logger.name)
    reporter = Reporter(lambda: 0.0, AccessLog(logger, wall=lambda: 0.0))
    tracer = _Tracer()
    reporter.tracer = tracer  # type: ignore[assignment]
    reporter.redactor = Redactor(["configured-value-4711"])
    request_id = "3f2a1c4e1b2c4d5e8f900123456789ab"
    reporter.finished(
        {
            "id": request_id,
            "model": "configured-value-4711",
            "error": "sk-proj-AbCdEfGh12345678",
            "status": 400,
        },
        0.0,
        1.0,
        [],
    )
    line = orjson.loads(caplog.records[-1].getMessage())
    expected = {"id": request_id, "model": "[redacted]", "error": "[redacted]", "status": 400}
    assert {k: line[k] for k in expected} == expected
    assert tracer.fields == [expected]
