"""Free ports for benchmarks' servers: a block of consecutive ones binds, whatever its size."""

from __future__ import annotations

import socket

import pytest

from loadtests.kit.ports import free_ports, port_taken


@pytest.mark.parametrize("count", [1, 3, 12])
def test_a_block_of_free_ports_binds(count: int) -> None:
    first = free_ports(count)
    sockets = [socket.socket() for _ in range(count)]
    try:
        for port, s in zip(range(first, first + count), sockets, strict=True):
            s.bind(("127.0.0.1", port))
    finally:
        for s in sockets:
            s.close()


def test_a_listening_port_is_taken_and_never_in_a_block() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        taken = server.getsockname()[1]
        assert port_taken(taken)
        for _ in range(20):
            first = free_ports(4)
            assert not first <= taken < first + 4


@pytest.mark.parametrize("count", [0, -1])
def test_a_block_of_no_ports_is_refused(count: int) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        free_ports(count)
