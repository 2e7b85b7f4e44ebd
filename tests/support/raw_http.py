"""A chat request written on a bare socket, so a test controls how (and whether) the client
reads the answer: it may leave mid-stream, or read slowly from a small receive buffer."""

from __future__ import annotations

import socket
from typing import Any

import orjson

CHAT = "/v1/chat/completions"


def raw_chat_request(
    base: str, body: dict[str, Any], *, timeout_s: float = 10, rcvbuf: int | None = None
) -> socket.socket:
    """The socket of a chat request sent to ``base`` (``http://host:port``), nothing read;
    ``rcvbuf``: its receive buffer's size, set before it connects."""
    host, port = base.removeprefix("http://").split(":")
    payload = orjson.dumps(body)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.settimeout(timeout_s)
    sock.connect((host, int(port)))
    head = (
        f"POST {CHAT} HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(payload)}\r\n\r\n"
    ).encode()
    sock.sendall(head + payload)
    return sock


def read_until(sock: socket.socket, marker: bytes) -> bytes:
    """What ``sock`` received up to (and with) ``marker``; fails if the server closes first."""
    received = b""
    while marker not in received:
        chunk = sock.recv(65536)
        assert chunk, "the gateway closed the stream"
        received += chunk
    return received
