"""Free TCP ports on 127.0.0.1 for servers a benchmark or test starts.

The operating system picks a free port for a socket bound to port 0 (``free_ports``: and the
ports after it are bound in turn to check they are free too); the socket is closed
before the port is returned, so another process could take it in between (rare on loopback;
a server that fails to bind says so).
"""

from __future__ import annotations

import contextlib
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


def free_ports(count: int, attempts: int = 50) -> int:
    """The first of ``count`` consecutive TCP ports on 127.0.0.1 that nothing listened on a
    moment ago (for a fleet whose replicas listen at ``base_port + i``): a port the operating
    system picks, kept when the ``count - 1`` after it bind too, else another pick."""
    if count < 1:
        raise ValueError(f"count must be at least 1, got {count}")
    for _ in range(attempts):
        first = free_port()
        if first + count - 1 <= 65535 and _all_bind(range(first, first + count)):
            return first
    raise OSError(f"no {count} consecutive free ports on 127.0.0.1 in {attempts} picks")


def _all_bind(ports: range) -> bool:
    with contextlib.ExitStack() as held:
        for port in ports:
            s = held.enter_context(socket.socket())
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                return False
    return True
