"""A client that leaves makes the gateway drop the upstream exchange at once, in every phase."""

from __future__ import annotations

import socket

import orjson
import pytest

from loadtests.kit.fake_upstream import FakeLog

CHAT = "/v1/chat/completions"


def _raw_request(gateway: str, body: dict[str, object]) -> socket.socket:
    host, port = gateway.removeprefix("http://").split(":")
    payload = orjson.dumps(body)
    sock = socket.create_connection((host, int(port)), timeout=10)
    head = (
        f"POST {CHAT} HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(payload)}\r\n\r\n"
    ).encode()
    sock.sendall(head + payload)
    return sock


BASE = {"model": "fast", "messages": [{"role": "user", "content": "hi"}]}


@pytest.mark.parametrize(
    ("body", "read_first"),
    [
        ({**BASE, "stream": True, "fake": {"ttft_s": 30}}, False),
        ({**BASE, "stream": True, "fake": {"tokens": 50, "itl_s": 1.0}}, True),
        ({**BASE, "stream": False, "fake": {"ttft_s": 30}}, False),
    ],
    ids=["stream-before-first-token", "stream-mid-stream", "non-streaming"],
)
def test_client_leaving_cancels_upstream(
    gateway: str, fake_log: FakeLog, body: dict[str, object], read_first: bool
) -> None:
    sock = _raw_request(gateway, body)
    assert fake_log.arrived.wait(timeout=10), "the request never reached the upstream"
    if read_first:
        received = b""
        while b"tok0" not in received:
            chunk = sock.recv(65536)
            assert chunk, "the gateway closed the stream"
            received += chunk
    sock.close()
    assert fake_log.left.wait(timeout=5), "the upstream kept working for a client that left"
    assert fake_log.cancelled == 1
