"""A hand-written HTTP/1.1 client on a raw TCP socket, so a departure is a socket closed.

``send`` writes ``POST /v1/chat/completions`` with a JSON body; ``read_first_content``
reads (httptools) until an SSE event carries content; ``peek_event`` says whether an event
already waits unread in the receive buffer; ``complete`` reads a whole answer (warm-up).
"""

from __future__ import annotations

import socket

import httptools
import orjson

from loadtests.cancellation.trial import Body, Headers

CHAT = "/v1/chat/completions"


def send(host: str, port: int, body: Body, headers: Headers = ()) -> socket.socket:
    payload = orjson.dumps(body)
    sock = socket.create_connection((host, port), timeout=10)
    extra = "".join(f"{k}: {v}\r\n" for k, v in headers)
    head = (
        f"POST {CHAT} HTTP/1.1\r\nhost: {host}:{port}\r\ncontent-type: application/json\r\n"
        f"{extra}content-length: {len(payload)}\r\n\r\n"
    ).encode()
    sock.sendall(head + payload)
    return sock


class Reader:
    """httptools callbacks: the decoded body so far."""

    def __init__(self) -> None:
        self.body = bytearray()
        self.complete = False

    def on_body(self, body: bytes) -> None:
        self.body += body

    def on_message_complete(self) -> None:
        self.complete = True


def has_content(body: bytes) -> bool:
    for event in body.split(b"\n\n")[:-1]:  # complete events only
        if not event.startswith(b"data: {"):
            continue
        choices = orjson.loads(event[6:]).get("choices") or []
        for choice in choices:
            if (choice.get("delta") or {}).get("content") or choice.get("text"):
                return True
    return False


def read_first_content(sock: socket.socket) -> None:
    reader = Reader()
    parser = httptools.HttpResponseParser(reader)
    while not has_content(bytes(reader.body)):
        data = sock.recv(65536)
        if not data or reader.complete:
            raise RuntimeError(f"stream ended before any content: {bytes(reader.body)[:300]!r}")
        parser.feed_data(data)
        if parser.get_status_code() not in (0, 200):
            raise RuntimeError(f"gateway answered {parser.get_status_code()}")


def peek_event(sock: socket.socket) -> bool:
    """Whether an SSE event already waits in the socket's receive buffer (left unread)."""
    try:
        data = sock.recv(65536, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except BlockingIOError:
        return False
    return b"data: " in data


def complete(gateway: tuple[str, int], body: Body, headers: Headers = ()) -> None:
    """One request read to its end (warm-up)."""
    sock = send(*gateway, body, headers)
    try:
        reader = Reader()
        parser = httptools.HttpResponseParser(reader)
        while not reader.complete:
            data = sock.recv(65536)
            if not data:
                raise RuntimeError("warm-up: connection closed early")
            parser.feed_data(data)
        if parser.get_status_code() != 200:
            raise RuntimeError(f"warm-up: {parser.get_status_code()} {bytes(reader.body)[:300]!r}")
    finally:
        sock.close()
