"""A real ``redis-server`` on 127.0.0.1 for tests: no persistence, its own free port."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.support.processes import free_port


class RedisServer:
    def __init__(self, port: int) -> None:
        self.port = port
        self.url = f"redis://127.0.0.1:{port}/0"
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                "redis-server",
                "--port", str(self.port),
                "--bind", "127.0.0.1",
                "--save", "",
                "--appendonly", "no",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )  # fmt: skip
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if "Ready to accept connections" in line:
                return
        raise AssertionError("redis-server did not start")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=15)
        self.proc = None


@contextmanager
def redis_server() -> Iterator[RedisServer]:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    server = RedisServer(free_port())
    server.start()
    try:
        yield server
    finally:
        server.stop()
