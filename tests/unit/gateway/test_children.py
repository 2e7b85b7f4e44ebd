"""Child processes: a port another process already serves is an error, not readiness."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from gateway.children import StartupError, running


class _Healthy(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def stale() -> Iterator[str]:
    """A server already answering 200 on a port, as a process left from an earlier run."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Healthy)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/health"
    finally:
        server.shutdown()
        server.server_close()


def test_a_port_already_answering_is_refused_before_starting(stale: str, tmp_path: Path) -> None:
    argv = [sys.executable, "-c", "pass"]  # never started: the check comes first
    with (
        pytest.raises(StartupError, match=r"answers before .* another process holds that port"),
        running(argv, [stale], tmp_path / "child.log", timeout_s=5),
    ):
        pytest.fail("started beside another process's server")
    assert not (tmp_path / "child.log").exists()  # nothing was started
