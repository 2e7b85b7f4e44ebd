"""Free TCP ports on 127.0.0.1 for servers a benchmark or test starts.

The operating system picks a free port for a socket bound to port 0; the socket is closed
before the port is returned, so another process could take it in between (rare on loopback;
a server that fails to bind says so).
"""

from __future__ import annotations

import socket


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listened on a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def port_taken(port: int) -> bool:
    """Whether something already listens on 127.0.0.1:``port`` (a server started there would
    fail to bind, and a health check would reach the other one)."""
    with socket.socket() as s:
        s.settimeout(1.0)
        return s.connect_ex(("127.0.0.1", port)) == 0
