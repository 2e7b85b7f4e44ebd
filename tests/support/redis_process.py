"""The ``redis_url`` fixture: a real redis-server (``redis_server.py``) for one test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.redis_server import redis_server


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    with redis_server(tmp_path) as server:
        yield server.url
