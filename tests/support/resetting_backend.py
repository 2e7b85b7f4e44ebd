"""A backend replica that is healthy to probes but resets every generation request's
connection once it has read the whole request (a crash between reading and answering).

Every ``GET`` (health probe, models list, metrics scrape) answers 200 with an empty body, so
probes keep the replica in rotation; a ``POST`` is read to the end of its body, then the
socket is closed with ``SO_LINGER`` 0, which sends a TCP reset instead of a response.
``resets`` counts them.
"""

from __future__ import annotations

import socket
import socketserver
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class _Handler(socketserver.StreamRequestHandler):
    server: _Server

    def handle(self) -> None:
        while True:
            request_line = self.rfile.readline()
            if not request_line:
                return
            length = 0
            while (line := self.rfile.readline()) not in (b"\r\n", b"\n", b""):
                name, _, value = line.decode("latin-1").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            self.rfile.read(length)
            if request_line.startswith(b"GET "):
                self.wfile.write(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
                continue
            self.server.count_reset()
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return  # closing with linger 0: a reset, not a FIN


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.resets = 0
        self._lock = threading.Lock()

    def shutdown_request(self, request: socket.socket) -> None:  # type: ignore[override]
        # The base class half-closes first (a FIN); a reset must be the first thing seen.
        self.close_request(request)

    def count_reset(self) -> None:
        with self._lock:
            self.resets += 1


@contextmanager
def resetting_backend() -> Iterator[_Server]:
    """The running replica; its URL is ``url(server)``."""
    server = _Server()
    thread = threading.Thread(target=server.serve_forever, name="resetting-backend", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def url(server: socketserver.TCPServer) -> str:
    host, port = server.server_address[:2]
    return f"http://{host!s}:{port}"
