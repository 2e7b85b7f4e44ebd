"""A client that leaves makes the gateway drop the upstream exchange at once, in every phase."""

from __future__ import annotations

import socket

import pytest

from loadtests.kit.fake_upstream import FakeLog
from tests.support.raw_http import raw_chat_request, read_until


def _raw_request(gateway: str, body: dict[str, object]) -> socket.socket:
    return raw_chat_request(gateway, body)


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
        read_until(sock, b"tok0")
    sock.close()
    assert fake_log.left.wait(timeout=5), "the upstream kept working for a client that left"
    assert fake_log.cancelled == 1
