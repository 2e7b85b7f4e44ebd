"""A log handler that watches every record of a test run for secrets and prompt text.

Installed for the whole session by ``tests/conftest.py``: the gateway's loggers run at DEBUG
and each record (message, arguments and traceback) is checked against the canaries of
``tests/support/security.py`` as it is emitted; the session fails if any was seen.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable


class CanaryHandler(logging.Handler):
    def __init__(self, canaries: Iterable[str]) -> None:
        super().__init__(logging.DEBUG)
        self.canaries = tuple(canaries)
        self.records = 0
        self.hits: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records += 1
        text = record.getMessage()
        if record.exc_info:
            text += logging.Formatter().formatException(record.exc_info)
        for canary in self.canaries:
            if canary in text:
                self.hits.append(f"{record.name}: {canary[:12]}... in {text[:200]!r}")


def leaked(texts: Iterable[str], canaries: Iterable[str]) -> list[str]:
    """The canaries found in any of ``texts``."""
    joined = "\n".join(texts)
    return [c for c in canaries if c in joined]
