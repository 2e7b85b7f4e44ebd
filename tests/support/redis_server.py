"""A real ``redis-server`` on 127.0.0.1 for tests: started on a free port, stopped after.

No persistence (``--save ''``, ``--appendonly no``): each test gets an empty server. The
server can be stopped and started again on the same port (Redis going away mid-test).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.processes import free_port


class RedisServer:
    def __init__(self, port: int, workdir: Path) -> None:
        self.port = port
        self.url = f"redis://127.0.0.1:{port}/0"
        self._workdir = workdir
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 10.0) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.skip("redis-server is not installed (.ci/test installs it)")
        args = [binary, "--port", str(self.port), "--bind", "127.0.0.1"]
        args += ["--save", "", "--appendonly", "no", "--dir", str(self._workdir)]
        self._proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self._wait_for_ping(timeout_s)

    def stop(self) -> None:
        if self._proc is None:
            return
        self._proc.kill()  # as a crash would: no goodbye to the clients
        self._proc.wait(timeout=10)
        self._proc = None

    def _wait_for_ping(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            assert self._proc is not None
            if self._proc.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self._proc.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(64).startswith(b"+PONG"):
                        return
            except OSError:
                pass  # not listening yet: the loop retries until the deadline
            if time.monotonic() > deadline:
                raise TimeoutError("redis-server did not answer PING")
            time.sleep(0.02)


@contextmanager
def redis_server(workdir: Path) -> Iterator[RedisServer]:
    server = RedisServer(free_port(), workdir)
    server.start()
    try:
        yield server
    finally:
        server.stop()
