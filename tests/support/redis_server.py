"""A real ``redis-server`` on 127.0.0.1 for tests: started on a free port, stopped after.

No persistence (``--save ''``, ``--appendonly no``): each test gets an empty server. The
server can be stopped and started again on the same port (Redis going away mid-test).
"""

from __future__ import annotations

import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from loadtests.kit.ports import free_port


class RedisServer:
    def __init__(self, port: int, workdir: Path) -> None:
        self.port = port
        self.url = f"redis://127.0.0.1:{port}/0"
        self._workdir = workdir
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.fail("redis-server is not installed (bash .ci/test installs it)")
        args = [binary, "--port", str(self.port), "--bind", "127.0.0.1"]
        args += ["--save", "", "--appendonly", "no", "--dir", str(self._workdir)]
        self._proc = subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        self._wait_until_ready(self._proc)

    def stop(self) -> None:
        if self._proc is None:
            return
        self._proc.kill()  # as a crash would: no goodbye to the clients
        self._proc.wait(timeout=10)
        self._proc = None

    @staticmethod
    def _wait_until_ready(proc: subprocess.Popen[str]) -> None:
        """Block on the server's log until it says it is ready (no polling), then keep
        draining the log in the background so a full pipe never stalls the server."""
        assert proc.stdout is not None
        for line in proc.stdout:
            if "Ready to accept connections" in line:
                break
        else:
            raise RuntimeError(f"redis-server exited with {proc.wait()}")
        threading.Thread(target=proc.stdout.read, daemon=True).start()


@contextmanager
def redis_server(workdir: Path) -> Iterator[RedisServer]:
    server = RedisServer(free_port(), workdir)
    server.start()
    try:
        yield server
    finally:
        server.stop()
