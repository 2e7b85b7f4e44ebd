"""Session-wide: every log record of the run is checked for keys, secrets and prompt text."""

from __future__ import annotations

import logging

import pytest

from tests.support.log_guard import CanaryHandler
from tests.support.security import CANARIES

pytest_plugins = ["tests.support.redis_process"]  # the redis_url fixture

_GUARD = pytest.StashKey[CanaryHandler]()


def pytest_sessionstart(session: pytest.Session) -> None:
    handler = CanaryHandler(CANARIES)
    session.stash[_GUARD] = handler
    logging.getLogger().addHandler(handler)
    # Records propagate to the root's handlers whatever the root's level: only the gateway's
    # own loggers are opened up to DEBUG, so every message they could ever write is checked.
    logging.getLogger("gateway").setLevel(logging.DEBUG)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    handler = session.stash.get(_GUARD, None)
    if handler is None:
        return
    logging.getLogger().removeHandler(handler)
    if handler.hits:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"SECRETS OR PROMPTS IN LOGS ({len(handler.hits)}):", red=True)
            for hit in handler.hits[:20]:
                reporter.write_line(f"  {hit}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
